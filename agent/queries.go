package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

// The Agent's read side: what it publishes, and Exec into a running
// container. All safe for concurrent use.

// Pod returns a copy of the pod uid as published (spec and status), and
// whether the agent has it. Safe for concurrent use.
func (a *Agent) Pod(uid types.UID) (*v1.Pod, bool) {
	return a.status.pod(uid)
}

// FinalPod returns a copy of pod uid as its worker last published it
// before it finished (its containers stopped), for a last status report
// of a deleted pod; false once forgotten (the most recent 256 are kept).
// Safe for concurrent use.
func (a *Agent) FinalPod(uid types.UID) (*v1.Pod, bool) {
	return a.status.finalPod(uid)
}

// Terminated reports whether nothing of pod uid is left on the node: every
// source has delivered its first list, the agent has no worker for the
// pod (it never started one, or the worker stopped every container,
// removed the sandbox and tore the volumes down), and no sandbox of it was
// found at start that is still to be adopted. A pod deleted through the
// API may be removed from it once this holds (the kubelet's
// canBeDeleted). Safe for concurrent use.
func (a *Agent) Terminated(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, hasWorker := a.workers[uid]
	return a.sourcesReady && !hasWorker && !a.running[uid]
}

// Pods returns the pods this node runs, with status, sorted by namespace and
// name. The returned objects are copies. Safe for concurrent use.
func (a *Agent) Pods() []*v1.Pod {
	return a.status.pods()
}

// Events returns the recent events of this node's pods, oldest first
// (copies). Safe for concurrent use.
func (a *Agent) Events() []v1.Event { return a.events.List() }

// Exec runs cmd in a running container of the pod namespace/name and waits
// for it, at most timeout (0: no limit). container may be empty when the pod
// has one container. A non-zero exit code is not an error; no such pod or
// container is an error wrapping runtime.ErrNotFound. Safe for concurrent
// use; blocking.
func (a *Agent) Exec(ctx context.Context, namespace, name, container string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error) {
	id, err := a.status.runningContainerID(namespace, name, container)
	if err != nil {
		return nil, err
	}
	return a.cfg.Runtime.ExecSync(ctx, id, cmd, timeout)
}

// containerIDFromStatus is the runtime's ID of a status's containerID
// (<runtime>://<id>, any runtime).
func containerIDFromStatus(s string) string {
	if _, id, ok := strings.Cut(s, "://"); ok {
		return id
	}
	return s
}

// Healthz reports whether the runtime answers.
func (a *Agent) Healthz(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := a.cfg.Runtime.Version(ctx); err != nil {
		return fmt.Errorf("container runtime: %w", err)
	}
	return nil
}
