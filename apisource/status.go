package apisource

import (
	"context"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// PodAPI is the API server as the pod managers use it.
type PodAPI interface {
	PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error)
	DeletePod(ctx context.Context, namespace, name string, uid types.UID, grace *int64) error
	CreatePod(ctx context.Context, p *v1.Pod) (*v1.Pod, error)
}

// DefaultStatusResync is how often every pod's status is compared with
// the API's even without a change (the kubelet status manager's 10 s).
const DefaultStatusResync = 10 * time.Second

// apiCallTimeout bounds each API call of the managers.
const apiCallTimeout = 30 * time.Second

// StatusManager reports the agent's pod status to the API server, the
// kubelet status manager's way: a pod's status is patched when it differs
// from the API's (and from what was sent last), a static pod's status goes
// to its mirror pod, and a pod deleted through the API is deleted for
// good (grace 0, its UID as precondition) once nothing of it is left on
// the node. Create with NewStatusManager; PodChanged is the agent's
// Config.PodChanged.
type StatusManager struct {
	api    PodAPI
	pods   Pods
	index  *Index
	log    *slog.Logger
	resync time.Duration

	mu    sync.Mutex
	dirty map[types.UID]bool
	wake  chan struct{}

	// sent and deleted are owned by Run's goroutine.
	sent    map[types.UID]v1.PodStatus
	deleted map[types.UID]bool
}

// NewStatusManager returns a manager reporting pods' status through api;
// index is the API's view of the node's pods (shared with the Source).
// resync 0: DefaultStatusResync.
func NewStatusManager(api PodAPI, pods Pods, index *Index, resync time.Duration, log *slog.Logger) *StatusManager {
	if resync <= 0 {
		resync = DefaultStatusResync
	}
	m := &StatusManager{
		api: api, pods: pods, index: index, log: log, resync: resync,
		dirty: map[types.UID]bool{}, wake: make(chan struct{}, 1),
		sent: map[types.UID]v1.PodStatus{}, deleted: map[types.UID]bool{},
	}
	index.Subscribe(func(p *v1.Pod) {
		if IsMirror(p) {
			m.PodChanged(types.UID(p.Annotations[ConfigMirrorAnnotation]))
			return
		}
		m.PodChanged(p.UID)
	})
	return m
}

// PodChanged marks pod uid (the agent's UID: an API pod's, or a static
// pod's) for a sync. Non-blocking, safe for concurrent use.
func (m *StatusManager) PodChanged(uid types.UID) {
	m.mu.Lock()
	m.dirty[uid] = true
	m.mu.Unlock()
	notify(m.wake)
}

// Run syncs changed pods as they come, and every pod each resync period,
// until ctx is done. Blocking.
func (m *StatusManager) Run(ctx context.Context) {
	t := time.NewTicker(m.resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		case <-t.C:
			m.markAll()
		}
		m.mu.Lock()
		dirty := m.dirty
		m.dirty = map[types.UID]bool{}
		m.mu.Unlock()
		for uid := range dirty {
			if ctx.Err() != nil {
				return
			}
			m.sync(ctx, uid)
		}
	}
}

// markAll marks every pod of the API's view and forgets what was sent for
// pods gone from it.
func (m *StatusManager) markAll() {
	pods, mirrors, _ := m.index.snapshot()
	known := map[types.UID]bool{}
	m.mu.Lock()
	for _, p := range pods {
		m.dirty[p.UID], known[p.UID] = true, true
	}
	for _, p := range mirrors {
		uid := types.UID(p.Annotations[ConfigMirrorAnnotation])
		m.dirty[uid], known[p.UID] = true, true
	}
	m.mu.Unlock()
	for uid := range m.sent {
		if !known[uid] {
			delete(m.sent, uid)
		}
	}
	for uid := range m.deleted {
		if !known[uid] {
			delete(m.deleted, uid)
		}
	}
}

// sync reports the status of the agent's pod uid and finishes its
// deletion; errors are logged, and the next resync retries.
func (m *StatusManager) sync(ctx context.Context, uid types.UID) {
	p, running := m.pods.Pod(uid)
	if running && p.Annotations[ConfigSourceAnnotation] == SourceFile {
		if mirror, ok := m.index.Mirror(p.Namespace, p.Name); ok && mirror.Annotations[ConfigMirrorAnnotation] == string(uid) {
			m.patch(ctx, mirror, p.Status)
		}
		return
	}
	api, ok := m.index.Pod(uid)
	if !ok {
		return
	}
	if running {
		m.patch(ctx, api, p.Status)
	}
	if api.DeletionTimestamp != nil && !m.deleted[uid] && m.pods.Terminated(uid) {
		// The kubelet's last status shows the containers stopped; a pod
		// kept by a finalizer shows it after the deletion too.
		if p, ok := m.pods.FinalPod(uid); ok && !running {
			m.patch(ctx, api, p.Status)
		}
		m.delete(ctx, api)
	}
}

// patch sends status to the API's pod api unless it has it already.
func (m *StatusManager) patch(ctx context.Context, api *v1.Pod, status v1.PodStatus) {
	merged := mergedStatus(&api.Status, status, api.Spec.ReadinessGates, time.Now())
	if sameStatus(&merged, &api.Status) {
		return
	}
	if last, ok := m.sent[api.UID]; ok && sameStatus(&merged, &last) {
		return // sent; the informer has not seen it yet
	}
	body, err := statusPatch(api.UID, &api.Status, merged)
	if err != nil {
		m.log.Error("pod status", "pod", nsName(api.Namespace, api.Name), "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	if _, err := m.api.PatchPodStatus(ctx, api.Namespace, api.Name, body); err != nil {
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			m.log.Warn("patching pod status", "pod", nsName(api.Namespace, api.Name), "err", err)
		}
		return
	}
	m.sent[api.UID] = merged
}

// delete removes the terminated pod api from the API server, as the
// kubelet does once a deleted pod's containers and volumes are gone.
func (m *StatusManager) delete(ctx context.Context, api *v1.Pod) {
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	zero := int64(0)
	err := m.api.DeletePod(ctx, api.Namespace, api.Name, api.UID, &zero)
	switch {
	case err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		m.deleted[api.UID] = true
		m.log.Info("pod deleted from the API server", "pod", nsName(api.Namespace, api.Name), "uid", api.UID)
	case ctx.Err() == nil:
		m.log.Warn("deleting pod", "pod", nsName(api.Namespace, api.Name), "err", err)
	}
}
