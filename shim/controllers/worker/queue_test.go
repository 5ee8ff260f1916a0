package worker

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestEnqueue: objects and tombstones are queued by namespace/name; an
// object without a key is dropped.
func TestEnqueue(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	tests := []struct {
		name string
		obj  any
		want string // "": nothing queued
	}{
		{"object", pod, "ns/a"},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: pod}, "ns/b"},
		{"no key", "not an object", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQueue("test", nil)
			defer q.ShutDown()
			q.Enqueue(tt.obj)
			if tt.want == "" {
				if q.Len() != 0 {
					t.Fatalf("queued %d keys, want none", q.Len())
				}
				return
			}
			if q.Len() != 1 {
				t.Fatalf("queued %d keys, want 1", q.Len())
			}
			if key, _ := q.Get(); key != tt.want {
				t.Errorf("queued %q, want %q", key, tt.want)
			}
		})
	}
}

// TestRunSynced: workers start only once the caches have synced; if ctx
// ends first, nothing is synced and the queue is shut down.
func TestRunSynced(t *testing.T) {
	for _, synced := range []bool{true, false} {
		q := NewQueue("test", nil)
		q.Add("k")
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan string, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			q.RunSynced(ctx, []cache.InformerSynced{func() bool { return synced }}, 1,
				func(_ context.Context, key string) error { got <- key; return nil })
		}()
		if synced {
			if key := <-got; key != "k" {
				t.Errorf("synced %q, want k", key)
			}
		}
		cancel()
		<-done
		if !q.ShuttingDown() {
			t.Errorf("synced=%v: queue not shut down", synced)
		}
		if !synced && len(got) != 0 {
			t.Errorf("synced a key before the caches synced")
		}
	}
}

// TestObject: an object, or a tombstone's, of the wanted type.
func TestObject(t *testing.T) {
	pod := &corev1.Pod{}
	tests := []struct {
		name   string
		obj    any
		wantOK bool
	}{
		{"object", pod, true},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: pod}, true},
		{"other type", &corev1.Node{}, false},
		{"tombstone of another type", cache.DeletedFinalStateUnknown{Key: "a", Obj: &corev1.Node{}}, false},
	}
	for _, tt := range tests {
		got, ok := Object[*corev1.Pod](tt.obj)
		if ok != tt.wantOK || (ok && got != pod) {
			t.Errorf("%s: Object = %p, %v; want %v", tt.name, got, ok, tt.wantOK)
		}
	}
}
