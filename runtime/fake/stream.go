package fake

import (
	"context"
	"fmt"
	"strings"

	"github.com/skiffnode/skiff/runtime"
)

var _ runtime.Streamer = (*Runtime)(nil)

// StreamBase is the base of the URLs the fake's Streamer methods return:
// <StreamBase>/exec/<id>, /attach/<id>, /portforward/<id>.
const StreamBase = "http://streaming.invalid"

// Exec implements runtime.Streamer for a running container; the call is
// recorded as "Exec <name> <cmd...>".
func (r *Runtime) Exec(_ context.Context, id string, cmd []string, _, _, _, _ bool) (string, error) {
	return r.streamContainer("Exec", id, strings.Join(cmd, " "), "/exec/")
}

// Attach implements runtime.Streamer for a running container; the call is
// recorded as "Attach <name>".
func (r *Runtime) Attach(_ context.Context, id string, _, _, _, _ bool) (string, error) {
	return r.streamContainer("Attach", id, "", "/attach/")
}

// PortForward implements runtime.Streamer for a ready sandbox; the call is
// recorded as "PortForward <pod name>".
func (r *Runtime) PortForward(_ context.Context, sandboxID string, _ []int32) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, ok := r.sandboxes[sandboxID]
	if !ok || sb.st.State != runtime.SandboxReady {
		return "", fmt.Errorf("sandbox %s: %w", sandboxID, runtime.ErrNotFound)
	}
	if err := r.call("PortForward", sb.st.Name); err != nil {
		return "", err
	}
	return StreamBase + "/portforward/" + sandboxID, nil
}

func (r *Runtime) streamContainer(op, id, detail, path string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return "", fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	if c.st.State != runtime.ContainerRunning {
		return "", fmt.Errorf("container %s is not running", id)
	}
	if err := r.call(op, strings.TrimSpace(c.st.Name+" "+detail)); err != nil {
		return "", err
	}
	return StreamBase + path + id, nil
}
