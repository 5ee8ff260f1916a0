package apisource

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffnode/skiff/internal/objects"
)

// ObjectAPI is the API server as the object manager uses it.
type ObjectAPI interface {
	// ObjectInformer watches the one object resource/namespace/name.
	ObjectInformer(resource, namespace, name string) cache.SharedIndexInformer
}

// objectSyncWait bounds how long a read waits for a new watch's first
// listing, so that a pod starting right after it arrived does not fail
// its first mount for an object that exists.
const objectSyncWait = 10 * time.Second

// ObjectManager serves the ConfigMaps and Secrets the API pods reference,
// the kubelet's watch-based way (configMapAndSecretChangeDetectionStrategy
// Watch): one watch per referenced object (a node may read no other),
// started when the first pod references it and stopped with the last. It
// is an objects.Getter; Changes is signalled when a watched object
// changes. Create with NewObjectManager, set the pods with SetPods, and
// Run it.
type ObjectManager struct {
	api ObjectAPI
	log *slog.Logger
	// Offline, when set before use, saves every watched object, and
	// serves an object whose watch has not listed (the API server does
	// not answer).
	Offline *OfflineCopy

	mu      sync.Mutex
	ctx     context.Context // Run's; nil before
	wg      sync.WaitGroup
	watches map[objectRef]*objectWatch
	pods    map[types.UID][]objectRef
	subs    []chan struct{}
}

type objectRef struct{ resource, namespace, name string }

type objectWatch struct {
	inf    cache.SharedIndexInformer
	cancel context.CancelFunc // nil: not started
	refs   int
}

// NewObjectManager returns a manager watching through api.
func NewObjectManager(api ObjectAPI, log *slog.Logger) *ObjectManager {
	return &ObjectManager{api: api, log: log, watches: map[objectRef]*objectWatch{}, pods: map[types.UID][]objectRef{}}
}

// SetPods makes the watched objects those pods reference (the API pods'
// full list). Safe for concurrent use; non-blocking.
func (m *ObjectManager) SetPods(pods []*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := make(map[types.UID][]objectRef, len(pods))
	for _, p := range pods {
		refs, ok := m.pods[p.UID]
		if !ok {
			refs = referencedObjects(p)
			for _, r := range refs {
				m.refLocked(r)
			}
		}
		next[p.UID] = refs
	}
	for uid, refs := range m.pods {
		if _, ok := next[uid]; !ok {
			for _, r := range refs {
				m.unrefLocked(r)
			}
		}
	}
	m.pods = next
}

func (m *ObjectManager) refLocked(r objectRef) {
	w := m.watches[r]
	if w == nil {
		w = &objectWatch{inf: m.api.ObjectInformer(r.resource, r.namespace, r.name)}
		if _, err := w.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { m.Offline.saveObject(r.resource, o); m.changed() },
			UpdateFunc: func(_, o any) { m.Offline.saveObject(r.resource, o); m.changed() },
			DeleteFunc: func(any) { m.Offline.deleteObject(r.resource, r.namespace, r.name); m.changed() },
		}); err != nil {
			m.log.Error("watching an object", "object", r, "err", err)
		}
		m.watches[r] = w
		m.startLocked(w)
	}
	w.refs++
}

func (m *ObjectManager) unrefLocked(r objectRef) {
	w := m.watches[r]
	if w == nil {
		return
	}
	if w.refs--; w.refs <= 0 {
		if w.cancel != nil {
			w.cancel()
		}
		delete(m.watches, r)
	}
}

func (m *ObjectManager) startLocked(w *objectWatch) {
	if m.ctx == nil || m.ctx.Err() != nil || w.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	w.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		w.inf.RunWithContext(ctx)
	}()
}

func (m *ObjectManager) changed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ch := range m.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Changes returns a channel signalled (coalesced) after a watched object
// changed. Safe for concurrent use.
func (m *ObjectManager) Changes() <-chan struct{} {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.subs = append(m.subs, ch)
	m.mu.Unlock()
	return ch
}

// Run runs the watches until ctx is done, and waits for them. Blocking.
func (m *ObjectManager) Run(ctx context.Context) {
	m.mu.Lock()
	m.ctx = ctx
	for _, w := range m.watches {
		m.startLocked(w)
	}
	m.mu.Unlock()
	<-ctx.Done()
	m.wg.Wait()
}

// ConfigMap returns the watched ConfigMap namespace/name; see get.
func (m *ObjectManager) ConfigMap(namespace, name string) (*v1.ConfigMap, error) {
	o, err := m.get("configmaps", namespace, name)
	if err != nil {
		return nil, err
	}
	return o.(*v1.ConfigMap), nil
}

// Secret returns the watched Secret namespace/name; see get.
func (m *ObjectManager) Secret(namespace, name string) (*v1.Secret, error) {
	o, err := m.get("secrets", namespace, name)
	if err != nil {
		return nil, err
	}
	return o.(*v1.Secret), nil
}

// get reads a watched object from its watch's cache, waiting up to
// objectSyncWait for a new watch's first listing (with an offline copy
// that the pods run from, not at all); an object no API pod references,
// or absent, is objects.ErrNotFound. An object whose watch has not listed
// comes from the offline copy, if it has it. The object is shared: read
// only.
func (m *ObjectManager) get(resource, namespace, name string) (any, error) {
	m.mu.Lock()
	w := m.watches[objectRef{resource, namespace, name}]
	m.mu.Unlock()
	if w == nil {
		return nil, fmt.Errorf("%s %s/%s: %w", resource, namespace, name, objects.ErrNotFound)
	}
	if !w.inf.HasSynced() {
		if m.Offline.Active() {
			if o, err := m.offlineObject(resource, namespace, name); err == nil {
				return o, nil
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), objectSyncWait)
		defer cancel()
		if !cache.WaitForCacheSync(ctx.Done(), w.inf.HasSynced) {
			if o, err := m.offlineObject(resource, namespace, name); err == nil {
				return o, nil
			}
			return nil, fmt.Errorf("%s %s/%s: not listed yet: %w", resource, namespace, name, objects.ErrNotFound)
		}
	}
	o, ok, err := w.inf.GetStore().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s %s/%s: %w", resource, namespace, name, objects.ErrNotFound)
	}
	return o, nil
}

// offlineObject reads an object from the offline copy.
func (m *ObjectManager) offlineObject(resource, namespace, name string) (any, error) {
	if resource == "secrets" {
		return m.Offline.Secret(namespace, name)
	}
	return m.Offline.ConfigMap(namespace, name)
}

// referencedObjects lists the ConfigMaps and Secrets pod reads: volumes
// (also projected ones), env and envFrom of every container, and image
// pull secrets (the kubelet's podutil.VisitPodSecretNames/ConfigMapNames).
// Pure.
func referencedObjects(pod *v1.Pod) []objectRef {
	seen := map[objectRef]bool{}
	var out []objectRef
	add := func(resource, name string) {
		r := objectRef{resource, pod.Namespace, name}
		if name != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add("secrets", s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add("configmaps", v.ConfigMap.Name)
		case v.Secret != nil:
			add("secrets", v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add("configmaps", s.ConfigMap.Name)
				}
				if s.Secret != nil {
					add("secrets", s.Secret.Name)
				}
			}
		}
	}
	visit := func(env []v1.EnvVar, from []v1.EnvFromSource) {
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add("configmaps", r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add("secrets", r.Name)
			}
		}
		for _, f := range from {
			if f.ConfigMapRef != nil {
				add("configmaps", f.ConfigMapRef.Name)
			}
			if f.SecretRef != nil {
				add("secrets", f.SecretRef.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		visit(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.Containers {
		visit(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		visit(c.Env, c.EnvFrom)
	}
	return out
}
