package apisource

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// TestServiceEnv_G4: no variables (an error) before the Services were
// listed; then the master service's and, with links, the namespace's.
func TestServiceEnv_G4(t *testing.T) {
	list := &v1.ServiceList{Items: []v1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.3", Ports: []v1.ServicePort{{Port: 5432}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "web"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.4", Ports: []v1.ServicePort{{Port: 80}}}},
	}}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list, nil },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	s := NewServiceEnv(cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), &v1.Service{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}))
	if _, err := s.ServiceEnv("app", true); err == nil {
		t.Fatal("no error before the services were read")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for !s.informer.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("informer never synced")
		}
		time.Sleep(time.Millisecond)
	}
	names := func(env []v1.EnvVar) map[string]string {
		m := map[string]string{}
		for _, e := range env {
			m[e.Name] = e.Value
		}
		return m
	}
	env, err := s.ServiceEnv("app", true)
	got := names(env)
	if err != nil || got["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" || got["KUBERNETES_SERVICE_PORT_HTTPS"] != "443" ||
		got["DB_SERVICE_HOST"] != "10.96.0.3" || got["WEB_SERVICE_HOST"] != "" {
		t.Errorf("app with links: %v %v", got, err)
	}
	env, _ = s.ServiceEnv("app", false)
	if got := names(env); got["DB_SERVICE_HOST"] != "" || got["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("app without links: %v", got)
	}
}
