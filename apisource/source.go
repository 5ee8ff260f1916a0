// Package apisource makes skiff a node of a Kubernetes API server (issue
// 16), the way the kubelet is one: the pods bound to the node become a pod
// source of the agent (Source), their status is patched back and deleted
// pods are removed once terminated (StatusManager), the Node is registered
// and its status kept current (NodeManager) with its Lease renewed
// (LeaseManager), and static pods get mirror pods (MirrorManager).
//
// Every manager is one goroutine started by its Run, which blocks until
// its context is done; the API calls go through the API port (an
// *apiclient.Client in skiff, a fake in the tests). The rules (what to
// patch, when to delete, which mirror pod to create) are pure functions,
// table-tested.
package apisource

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// The kubelet's pod annotations (pkg/kubelet/types).
const (
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	ConfigMirrorAnnotation = "kubernetes.io/config.mirror"
	ConfigHashAnnotation   = "kubernetes.io/config.hash"
	// SourceAPI is the config.source of pods from the API server.
	SourceAPI = "api"
	// SourceFile is the config.source of static pods.
	SourceFile = "file"
)

// IsMirror reports whether p is a mirror pod (never run: it stands for a
// static pod). Pure.
func IsMirror(p *v1.Pod) bool {
	_, ok := p.Annotations[ConfigMirrorAnnotation]
	return ok
}

// Pods is the agent as the API source's managers see it: the pods it runs
// with their status. Safe for concurrent use.
type Pods interface {
	// Pod returns a copy of the pod uid as the agent publishes it.
	Pod(uid types.UID) (*v1.Pod, bool)
	// Terminated reports whether nothing of pod uid is left on the node.
	Terminated(uid types.UID) bool
	// FinalPod returns a copy of the pod uid as the agent last published
	// it before it finished with it (its containers stopped).
	FinalPod(uid types.UID) (*v1.Pod, bool)
}

// Index is the API server's view of the node's pods, fed by the pod
// informer: regular pods by UID and mirror pods by namespace/name.
// Safe for concurrent use.
type Index struct {
	mu      sync.Mutex
	pods    map[types.UID]*v1.Pod
	mirrors map[string]*v1.Pod
	gen     uint64
	subs    []func(*v1.Pod)
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{pods: map[types.UID]*v1.Pod{}, mirrors: map[string]*v1.Pod{}}
}

func nsName(namespace, name string) string { return namespace + "/" + name }

// Subscribe adds fn, called (outside the index's lock, on the informer's
// goroutine) with each pod added, changed or deleted from then on. fn must
// not block. Safe for concurrent use.
func (x *Index) Subscribe(fn func(*v1.Pod)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.subs = append(x.subs, fn)
}

// Handler is the informer's event handler that keeps x.
func (x *Index) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { x.set(o, false) },
		UpdateFunc: func(_, o any) { x.set(o, false) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			x.set(o, true)
		},
	}
}

func (x *Index) set(o any, deleted bool) {
	p, ok := o.(*v1.Pod)
	if !ok {
		return
	}
	x.mu.Lock()
	switch k := nsName(p.Namespace, p.Name); {
	case IsMirror(p) && deleted:
		if m := x.mirrors[k]; m != nil && m.UID == p.UID {
			delete(x.mirrors, k)
		}
	case IsMirror(p):
		x.mirrors[k] = p
	case deleted:
		delete(x.pods, p.UID)
	default:
		x.pods[p.UID] = p
	}
	x.gen++
	subs := x.subs
	x.mu.Unlock()
	for _, fn := range subs {
		fn(p)
	}
}

// Pod returns the API's pod uid (not a copy: read only).
func (x *Index) Pod(uid types.UID) (*v1.Pod, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p, ok := x.pods[uid]
	return p, ok
}

// Mirror returns the mirror pod namespace/name (not a copy: read only).
func (x *Index) Mirror(namespace, name string) (*v1.Pod, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p, ok := x.mirrors[nsName(namespace, name)]
	return p, ok
}

// snapshot returns the regular pods sorted by UID, the mirror pods, and
// the generation they belong to.
func (x *Index) snapshot() (pods []*v1.Pod, mirrors []*v1.Pod, gen uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, p := range x.pods {
		pods = append(pods, p)
	}
	for _, p := range x.mirrors {
		mirrors = append(mirrors, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].UID < pods[j].UID })
	sort.Slice(mirrors, func(i, j int) bool { return mirrors[i].UID < mirrors[j].UID })
	return pods, mirrors, x.gen
}

// Source is the agent's pod source of the API server: the pods bound to
// this node (mirror pods excepted), annotated config.source=api as the
// kubelet annotates them. Level-triggered: the informer lists, then
// watches (re-listing after a broken watch); the sink gets the full set
// after the informer's first list and whenever the index changes.
type Source struct {
	Informer cache.SharedIndexInformer
	Index    *Index
	Logger   *slog.Logger
	// OnPods, when set, gets each list before the agent does (e.g. the
	// object manager's SetPods, so the objects the pods need are watched
	// before their workers read them). It must not block.
	OnPods func([]*v1.Pod)
	// Offline, when set (--offline-pods), saves every list the agent
	// gets; at start, when the informer has not listed within
	// OfflineStartAfter, the agent gets the copy's pods until it has.
	Offline *OfflineCopy
	// OfflineAfter replaces OfflineStartAfter when positive (tests).
	OfflineAfter time.Duration
}

// Run runs the informer until ctx is done; see agent.Source.
func (s *Source) Run(ctx context.Context, sink func([]*v1.Pod)) error {
	changed := make(chan struct{}, 1)
	s.Index.Subscribe(func(*v1.Pod) { notify(changed) })
	if _, err := s.Informer.AddEventHandler(s.Index.Handler()); err != nil {
		return fmt.Errorf("api source: %w", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); s.Informer.RunWithContext(ctx) }()
	if !s.waitListed(ctx, sink) {
		return ctx.Err()
	}
	var d desired
	first := true
	for {
		pods, _, _ := s.Index.snapshot()
		if list, changed := d.update(pods); first || changed {
			if s.OnPods != nil {
				s.OnPods(list)
			}
			s.Offline.SavePods(list)
			sink(list)
			first = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			// Coalesce a burst of events (a list, a deployment's pods).
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	}
}

// waitListed waits for the informer's first list; false when ctx ended
// first. With an offline copy, the agent gets the copy's pods when the
// list takes longer than OfflineStartAfter (the API server does not
// answer), and runs them until the list comes.
func (s *Source) waitListed(ctx context.Context, sink func([]*v1.Pod)) bool {
	if s.Offline != nil {
		after := OfflineStartAfter
		if s.OfflineAfter > 0 {
			after = s.OfflineAfter
		}
		wctx, cancel := context.WithTimeout(ctx, after)
		listed := cache.WaitForCacheSync(wctx.Done(), s.Informer.HasSynced)
		cancel()
		if listed {
			return true
		}
		if pods, ok := s.Offline.LoadPods(); ok && ctx.Err() == nil {
			s.Logger.Warn("the API server does not answer: running the API pods of the offline copy", "pods", len(pods), "after", after)
			s.Offline.setActive(true)
			if s.OnPods != nil {
				s.OnPods(pods)
			}
			sink(pods)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), s.Informer.HasSynced) {
		return false
	}
	if s.Offline.Active() {
		s.Logger.Info("the API server answered: its pods replace the offline copy")
		s.Offline.setActive(false)
	}
	return true
}

// desired is the list the source last gave the agent: copies of the API's
// pods, annotated as coming from the API, by UID.
type desired struct {
	copies map[types.UID]agentCopy
}

// agentCopy is the agent's copy of an API pod and the resourceVersion of
// the API's object it last compared with.
type agentCopy struct {
	pod *v1.Pod
	rv  string
}

// update returns the agent's list for the API's pods (sorted by UID), and
// whether it differs from the last one in what the agent acts on: the set
// of pods, a deletion (and its grace period), a terminal phase, or an edit
// of the spec, labels or annotations (see edited). A pod whose object
// changed in nothing of these (the status patches the API echoes back)
// keeps its copy: no copies, and the agent sees the same object, so its
// worker is not woken for it.
func (d *desired) update(pods []*v1.Pod) ([]*v1.Pod, bool) {
	next := make(map[types.UID]agentCopy, len(pods))
	out := make([]*v1.Pod, 0, len(pods))
	changed := len(pods) != len(d.copies)
	for _, p := range pods {
		c, ok := d.copies[p.UID]
		if !ok || c.rv != p.ResourceVersion {
			if !ok || actsOn(c.pod) != actsOn(p) || edited(c.pod, p) {
				changed = true
				c.pod = p.DeepCopy()
				if c.pod.Annotations == nil {
					c.pod.Annotations = map[string]string{}
				}
				c.pod.Annotations[ConfigSourceAnnotation] = SourceAPI
			}
			c.rv = p.ResourceVersion
		}
		next[p.UID] = c
		out = append(out, c.pod)
	}
	d.copies = next
	return out, changed
}

// actsOn is what the agent acts on in an API pod besides its existence.
func actsOn(p *v1.Pod) string {
	grace := int64(-1)
	if p.DeletionGracePeriodSeconds != nil {
		grace = *p.DeletionGracePeriodSeconds
	}
	terminal := p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	return fmt.Sprintf("%t/%d/%t", p.DeletionTimestamp != nil, grace, terminal)
}

// edited reports whether the API's pod p differs from the agent's copy c
// in its spec (an image, activeDeadlineSeconds), labels or annotations
// (downwardAPI volumes): the edits a running pod takes, so the agent gets
// the new object. The status patches the API echoes back are not edits.
func edited(c, p *v1.Pod) bool {
	if !maps.Equal(c.Labels, p.Labels) {
		return true
	}
	// c carries the config.source annotation the source adds.
	n := 0
	for k, v := range p.Annotations {
		if k == ConfigSourceAnnotation {
			continue
		}
		if cv, ok := c.Annotations[k]; !ok || cv != v {
			return true
		}
		n++
	}
	if _, ok := c.Annotations[ConfigSourceAnnotation]; ok {
		n++
	}
	return n != len(c.Annotations) || !equality.Semantic.DeepEqual(c.Spec, p.Spec)
}

// notify signals ch without blocking.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
