package apisource

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodSource is a pod source as the agent runs it (agent.Source).
type PodSource interface {
	Run(ctx context.Context, sink func([]*v1.Pod)) error
}

// DefaultMirrorResync is how often the mirror pods are checked without a
// change.
const DefaultMirrorResync = 10 * time.Second

// MirrorManager keeps a mirror pod in the API server for every static pod
// (H.15, H.16): created once the Node exists, re-created when deleted or
// when its static pod changed, deleted when its static pod is gone. It
// learns the static pods by wrapping their source (Wrap).
type MirrorManager struct {
	API   PodAPI
	Index *Index
	// Node is the registered Node (nil before), the mirror pods' owner.
	Node   func() *v1.Node
	Logger *slog.Logger
	// Resync: 0 is DefaultMirrorResync.
	Resync time.Duration

	mu     sync.Mutex
	static []*v1.Pod
	known  bool
	wake   chan struct{}
	once   sync.Once
}

func (m *MirrorManager) init() {
	m.once.Do(func() {
		m.wake = make(chan struct{}, 1)
		m.Index.Subscribe(func(p *v1.Pod) {
			if IsMirror(p) {
				notify(m.wake)
			}
		})
	})
}

// Wrap returns src with every list it delivers also given to m. Call
// before Run.
func (m *MirrorManager) Wrap(src PodSource) PodSource {
	m.init()
	return wrapped{src: src, m: m}
}

type wrapped struct {
	src PodSource
	m   *MirrorManager
}

func (w wrapped) Run(ctx context.Context, sink func([]*v1.Pod)) error {
	return w.src.Run(ctx, func(pods []*v1.Pod) {
		w.m.mu.Lock()
		w.m.static, w.m.known = pods, true
		w.m.mu.Unlock()
		notify(w.m.wake)
		sink(pods)
	})
}

// Run reconciles the mirror pods on every change and every Resync until
// ctx is done. Blocking.
func (m *MirrorManager) Run(ctx context.Context) {
	m.init()
	if m.Resync <= 0 {
		m.Resync = DefaultMirrorResync
	}
	t := time.NewTicker(m.Resync)
	defer t.Stop()
	for {
		m.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		case <-t.C:
		}
	}
}

func (m *MirrorManager) reconcile(ctx context.Context) {
	node := m.Node()
	m.mu.Lock()
	static, known := m.static, m.known
	m.mu.Unlock()
	if node == nil || node.UID == "" || !known {
		return
	}
	_, mirrors, _ := m.Index.snapshot()
	creates, deletes := planMirrors(static, mirrors, node)
	for _, p := range deletes {
		c, cancel := context.WithTimeout(ctx, apiCallTimeout)
		zero := int64(0)
		err := m.API.DeletePod(c, p.Namespace, p.Name, p.UID, &zero)
		cancel()
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
			m.Logger.Warn("deleting mirror pod", "pod", nsName(p.Namespace, p.Name), "err", err)
		}
	}
	for _, p := range creates {
		c, cancel := context.WithTimeout(ctx, apiCallTimeout)
		_, err := m.API.CreatePod(c, p)
		cancel()
		if err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
			m.Logger.Warn("creating mirror pod", "pod", nsName(p.Namespace, p.Name), "err", err)
		}
	}
}

// planMirrors returns the mirror pods to create and those to delete (with
// grace 0: nothing runs for a mirror pod): a static pod without a mirror
// gets one; a mirror someone deleted (it has a deletionTimestamp), of an
// older version of its static pod (another config.hash) or of no static
// pod is deleted, and re-created by a later plan once it is gone, as the
// kubelet's syncPod does. Pure.
func planMirrors(static, mirrors []*v1.Pod, node *v1.Node) (creates, deletes []*v1.Pod) {
	byName := map[string]*v1.Pod{}
	for _, p := range mirrors {
		byName[nsName(p.Namespace, p.Name)] = p
	}
	want := map[string]bool{}
	for _, s := range static {
		k := nsName(s.Namespace, s.Name)
		want[k] = true
		switch mp := byName[k]; {
		case mp == nil:
			creates = append(creates, mirrorOf(s, node))
		case mp.DeletionTimestamp != nil || mp.Annotations[ConfigMirrorAnnotation] != s.Annotations[ConfigHashAnnotation]:
			deletes = append(deletes, mp)
		}
	}
	for _, mp := range mirrors {
		if !want[nsName(mp.Namespace, mp.Name)] {
			deletes = append(deletes, mp)
		}
	}
	sort.Slice(creates, func(i, j int) bool {
		return nsName(creates[i].Namespace, creates[i].Name) < nsName(creates[j].Namespace, creates[j].Name)
	})
	return creates, deletes
}

// mirrorOf is the mirror pod of static pod s, as the kubelet's mirror
// client creates it: the static pod's name, labels, annotations and spec,
// the config.mirror annotation holding its config.hash, and the Node as
// its controlling owner (NodeRestriction allows a node no other). Pure.
func mirrorOf(s *v1.Pod, node *v1.Node) *v1.Pod {
	c := s.DeepCopy()
	ann := c.Annotations
	if ann == nil {
		ann = map[string]string{}
	}
	ann[ConfigMirrorAnnotation] = s.Annotations[ConfigHashAnnotation]
	yes := true
	return &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: c.Name, Namespace: c.Namespace, Labels: c.Labels, Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &yes,
			}},
		},
		Spec: c.Spec,
	}
}
