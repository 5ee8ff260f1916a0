package objects

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cm(ns, name, v string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": v}}
}

func sec(ns, name, v string) *v1.Secret {
	return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"k": []byte(v)}}
}

func TestStoreGetAndNotFound(t *testing.T) {
	s := NewStore()
	s.Replace([]*v1.ConfigMap{cm("default", "a", "1")}, []*v1.Secret{sec("kube-system", "b", "2")})
	if got, err := s.ConfigMap("default", "a"); err != nil || got.Data["k"] != "1" {
		t.Fatalf("ConfigMap(default/a) = %v, %v", got, err)
	}
	if got, err := s.Secret("kube-system", "b"); err != nil || string(got.Data["k"]) != "2" {
		t.Fatalf("Secret(kube-system/b) = %v, %v", got, err)
	}
	// Namespaces separate objects of the same name.
	if _, err := s.ConfigMap("other", "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ConfigMap(other/a) error = %v, want ErrNotFound", err)
	}
	if _, err := s.Secret("default", "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Secret(default/b) error = %v, want ErrNotFound", err)
	}
}

func TestStoreReplaceNotifiesOnlyOnChange(t *testing.T) {
	s := NewStore()
	ch := s.Subscribe()
	steps := []struct {
		name   string
		cms    []*v1.ConfigMap
		secs   []*v1.Secret
		notify bool
	}{
		{"first content", []*v1.ConfigMap{cm("d", "a", "1")}, nil, true},
		{"same content", []*v1.ConfigMap{cm("d", "a", "1")}, nil, false},
		{"edited value", []*v1.ConfigMap{cm("d", "a", "2")}, nil, true},
		{"secret added", []*v1.ConfigMap{cm("d", "a", "2")}, []*v1.Secret{sec("d", "s", "x")}, true},
		{"secret edited", []*v1.ConfigMap{cm("d", "a", "2")}, []*v1.Secret{sec("d", "s", "y")}, true},
		{"everything removed", nil, nil, true},
		{"still empty", nil, nil, false},
	}
	var gen uint64
	for _, st := range steps {
		s.Replace(st.cms, st.secs)
		var got bool
		select {
		case <-ch:
			got = true
		default:
		}
		if got != st.notify {
			t.Errorf("%s: notified = %v, want %v", st.name, got, st.notify)
		}
		if next := s.Generation(); (next != gen) != st.notify {
			t.Errorf("%s: generation %d -> %d, want a change = %v", st.name, gen, next, st.notify)
		} else {
			gen = next
		}
	}
}
