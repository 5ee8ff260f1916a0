package apisource

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// watchedInformer is an informer of obj's kind that lists list (empty,
// at resourceVersion 1) and then watches w.
func watchedInformer(w watch.Interface, list, obj runtime.Object) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list, nil },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil },
	}
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), obj, 0, cache.Indexers{})
}

// fakeAPI records the calls of every manager; errs[call] (e.g.
// "UpdateNodeStatus") fails the next such call with that error.
type fakeAPI struct {
	mu    sync.Mutex
	calls []string
	errs  map[string][]error
	node  *v1.Node
	lease *coordv1.Lease
	rv    int
}

func (f *fakeAPI) call(name, arg string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name+" "+arg)
	if e := f.errs[name]; len(e) > 0 {
		f.errs[name] = e[1:]
		return e[0]
	}
	return nil
}

func (f *fakeAPI) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeAPI) fail(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = map[string][]error{}
	}
	f.errs[name] = append(f.errs[name], err)
}

func (f *fakeAPI) nextRV() string { f.rv++; return fmt.Sprint(f.rv) }

func (f *fakeAPI) PatchPodStatus(_ context.Context, ns, name string, patch []byte) (*v1.Pod, error) {
	return &v1.Pod{}, f.call("PatchPodStatus", ns+"/"+name+" "+string(patch))
}

func (f *fakeAPI) DeletePod(_ context.Context, ns, name string, uid types.UID, grace *int64) error {
	g := "nil"
	if grace != nil {
		g = fmt.Sprint(*grace)
	}
	return f.call("DeletePod", fmt.Sprintf("%s/%s uid=%s grace=%s", ns, name, uid, g))
}

func (f *fakeAPI) CreatePod(_ context.Context, p *v1.Pod) (*v1.Pod, error) {
	return p, f.call("CreatePod", p.Namespace+"/"+p.Name+" mirror="+p.Annotations[ConfigMirrorAnnotation])
}

func (f *fakeAPI) GetNode(_ context.Context, name string) (*v1.Node, error) {
	if err := f.call("GetNode", name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.node == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
	}
	return f.node.DeepCopy(), nil
}

func (f *fakeAPI) CreateNode(_ context.Context, n *v1.Node) (*v1.Node, error) {
	if err := f.call("CreateNode", n.Name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.node != nil {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "nodes"}, n.Name)
	}
	f.node = n.DeepCopy()
	f.node.UID, f.node.ResourceVersion = "node-uid", f.nextRV()
	return f.node.DeepCopy(), nil
}

func (f *fakeAPI) UpdateNode(_ context.Context, n *v1.Node) (*v1.Node, error) {
	if err := f.call("UpdateNode", n.Name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.node = n.DeepCopy()
	f.node.ResourceVersion = f.nextRV()
	return f.node.DeepCopy(), nil
}

func (f *fakeAPI) UpdateNodeStatus(_ context.Context, n *v1.Node) (*v1.Node, error) {
	if err := f.call("UpdateNodeStatus", n.Name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.node.Status = *n.Status.DeepCopy()
	f.node.ResourceVersion = f.nextRV()
	return f.node.DeepCopy(), nil
}

func (f *fakeAPI) GetLease(_ context.Context, ns, name string) (*coordv1.Lease, error) {
	if err := f.call("GetLease", ns+"/"+name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "leases"}, name)
	}
	return f.lease.DeepCopy(), nil
}

func (f *fakeAPI) CreateLease(_ context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	if err := f.call("CreateLease", l.Namespace+"/"+l.Name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lease = l.DeepCopy()
	return l, nil
}

func (f *fakeAPI) UpdateLease(_ context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	if err := f.call("UpdateLease", l.Namespace+"/"+l.Name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lease = l.DeepCopy()
	return l, nil
}

// fakePods is the agent: published pods and terminated UIDs.
type fakePods struct {
	mu         sync.Mutex
	pods       map[types.UID]*v1.Pod
	terminated map[types.UID]bool
	final      map[types.UID]*v1.Pod
}

func (f *fakePods) Pod(uid types.UID) (*v1.Pod, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pods[uid]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

func (f *fakePods) FinalPod(uid types.UID) (*v1.Pod, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.final[uid]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

func (f *fakePods) Terminated(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.terminated[uid]
}

func (f *fakeAPI) CreateEvent(_ context.Context, ev *v1.Event) (*v1.Event, error) {
	return ev, f.call("CreateEvent", ev.Namespace+"/"+ev.Name+" "+ev.Reason)
}

func (f *fakeAPI) PatchEvent(_ context.Context, ns, name string, patch []byte) (*v1.Event, error) {
	return &v1.Event{}, f.call("PatchEvent", ns+"/"+name+" "+string(patch))
}
