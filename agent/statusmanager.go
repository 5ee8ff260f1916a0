package agent

import (
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

// statusPublisher is the pod workers' port to the status manager.
type statusPublisher interface {
	// publish records p (with its status) as the pod's published state;
	// ignored once the pod's worker was forgotten. Safe for concurrent
	// use; returns quickly.
	publish(p *v1.Pod)
}

// statusManager keeps the pods as their workers last published them (spec
// and status) and answers queries about them. The agent tells it which
// pods have a worker (track, forget): only those are published. Published
// objects are never modified; get hands them out uncopied, the exported
// queries hand out copies. Safe for concurrent use; its lock is taken
// after the agent's, never before.
type statusManager struct {
	// changed: Config.PodChanged (nil: none), called with mu held.
	changed func(types.UID)

	mu sync.Mutex
	// tracked: the pods with a worker, published or not yet.
	tracked   map[types.UID]bool
	published map[types.UID]*v1.Pod
	// final: the last published pod of the workers that finished (their
	// containers exited, then removed), oldest first in finalOrder, at most
	// maxFinal: what an API source reports before it deletes the pod.
	final      map[types.UID]*v1.Pod
	finalOrder []types.UID
}

// maxFinal bounds statusManager.final.
const maxFinal = 256

func newStatusManager(changed func(types.UID)) *statusManager {
	return &statusManager{changed: changed, tracked: map[types.UID]bool{}, published: map[types.UID]*v1.Pod{},
		final: map[types.UID]*v1.Pod{}}
}

// track makes the publishes of pod uid count: its worker starts.
func (s *statusManager) track(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tracked[uid] = true
}

// forget drops pod uid (its worker is done) and tells changed.
func (s *statusManager) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.published[uid]; p != nil {
		if _, ok := s.final[uid]; !ok {
			s.finalOrder = append(s.finalOrder, uid)
		}
		s.final[uid] = p
		for len(s.finalOrder) > maxFinal {
			delete(s.final, s.finalOrder[0])
			s.finalOrder = s.finalOrder[1:]
		}
	}
	delete(s.tracked, uid)
	delete(s.published, uid)
	s.changedLocked(uid)
}

// finalPod returns a copy of the last pod published by the finished
// worker of uid.
func (s *statusManager) finalPod(uid types.UID) (*v1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.final[uid]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

func (s *statusManager) publish(p *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tracked[p.UID] {
		s.published[p.UID] = p
		s.changedLocked(p.UID)
	}
}

func (s *statusManager) changedLocked(uid types.UID) {
	if s.changed != nil {
		s.changed(uid)
	}
}

// get returns the published pod uid (not a copy: read only), nil if none.
func (s *statusManager) get(uid types.UID) *v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.published[uid]
}

// pod returns a copy of the published pod uid and whether there is one.
func (s *statusManager) pod(uid types.UID) (*v1.Pod, bool) {
	p := s.get(uid)
	if p == nil {
		return nil, false
	}
	return p.DeepCopy(), true
}

// pods returns copies of the published pods, sorted by namespace, name and
// UID.
func (s *statusManager) pods() []*v1.Pod {
	s.mu.Lock()
	out := make([]*v1.Pod, 0, len(s.published))
	for _, p := range s.published {
		out = append(out, p.DeepCopy())
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].UID < out[j].UID
	})
	return out
}

// counts returns how many published pods are in phase Running, and how
// many are published.
func (s *statusManager) counts() (running, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.published {
		if p.Status.Phase == v1.PodRunning {
			running++
		}
	}
	return running, len(s.published)
}

// runningContainerID finds a running container by pod and container name
// in the published status (container "": the pod's only container). No
// such pod or container is an error wrapping runtime.ErrNotFound.
func (s *statusManager) runningContainerID(namespace, name, container string) (string, error) {
	s.mu.Lock()
	var pod *v1.Pod
	for _, p := range s.published {
		if p.Namespace == namespace && p.Name == name && p.DeletionTimestamp == nil {
			pod = p
		}
	}
	s.mu.Unlock()
	if pod == nil {
		return "", fmt.Errorf("pod %s/%s: %w", namespace, name, runtime.ErrNotFound)
	}
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			return "", fmt.Errorf("pod %s/%s has %d containers: a container name is required", namespace, name, len(pod.Spec.Containers))
		}
		container = pod.Spec.Containers[0].Name
	}
	all := append(append(append([]v1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...), pod.Status.EphemeralContainerStatuses...)
	for _, cs := range all {
		if cs.Name != container {
			continue
		}
		if cs.State.Running == nil {
			return "", fmt.Errorf("container %q of pod %s/%s is not running", container, namespace, name)
		}
		return containerIDFromStatus(cs.ContainerID), nil
	}
	return "", fmt.Errorf("container %q in pod %s/%s: %w", container, namespace, name, runtime.ErrNotFound)
}
