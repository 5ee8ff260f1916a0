// Package criops is the harness's view of containerd through CRI: it
// observes pods from outside any agent (container states and timestamps)
// and, as the "raw CRI floor", runs pods with exactly the CRI calls they
// need and nothing in between. The Client is safe for concurrent use.
package criops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels the kubelet (and skiff) put on sandboxes and containers.
const (
	LabelPodName      = "io.kubernetes.pod.name"
	LabelPodNamespace = "io.kubernetes.pod.namespace"
	LabelPodUID       = "io.kubernetes.pod.uid"
	LabelContainer    = "io.kubernetes.container.name"
	// LabelSkiffManaged marks objects skiff created.
	LabelSkiffManaged = "io.skiff.managed"
)

// Client is a CRI runtime service client.
type Client struct {
	conn *grpc.ClientConn
	RT   runtimeapi.RuntimeServiceClient
	// IMG is the image service on the same connection.
	IMG runtimeapi.ImageServiceClient
}

// Dial connects to the CRI unix socket path (not a URL).
func Dial(socket string) (*Client, error) {
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, fmt.Errorf("dial CRI %s: %w", socket, err)
	}
	return &Client{conn: conn, RT: runtimeapi.NewRuntimeServiceClient(conn), IMG: runtimeapi.NewImageServiceClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Version returns "<runtime name> <runtime version>".
func (c *Client) Version(ctx context.Context) (string, error) {
	v, err := c.RT.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "", fmt.Errorf("CRI version: %w", err)
	}
	return v.RuntimeName + " " + v.RuntimeVersion, nil
}

// Match selects containers.
type Match func(*runtimeapi.Container) bool

// InPods matches containers named container in the pods named in names
// (pod name label), in namespace ns.
func InPods(ns, container string, names []string) Match {
	set := nameSet(names)
	return func(c *runtimeapi.Container) bool {
		return c.Labels[LabelPodNamespace] == ns && c.Labels[LabelContainer] == container && set[c.Labels[LabelPodName]]
	}
}

// WaitRunning polls RUNNING containers every poll until, for every pod
// name in names, a container matched by m is running, and returns each
// pod's container StartedAt (the runtime's timestamp, not the poll's).
// Blocks until done, ctx ends (error naming the pods still missing).
func (c *Client) WaitRunning(ctx context.Context, names []string, m Match, poll time.Duration) (map[string]time.Time, error) {
	started := make(map[string]time.Time, len(names))
	for {
		resp, err := c.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		}})
		if err == nil {
			for _, ctr := range resp.Containers {
				pod := ctr.Labels[LabelPodName]
				if _, seen := started[pod]; seen || !m(ctr) {
					continue
				}
				st, err := c.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr.Id})
				if err != nil || st.Status.GetStartedAt() == 0 {
					continue // gone or racing; the next poll decides
				}
				started[pod] = time.Unix(0, st.Status.StartedAt)
			}
		}
		if len(started) >= len(names) {
			return started, nil
		}
		select {
		case <-ctx.Done():
			return started, fmt.Errorf("wait for %d pods running: %d running when %w (missing e.g. %s)",
				len(names), len(started), ctx.Err(), missing(names, started))
		case <-time.After(poll):
		}
	}
}

func missing(names []string, have map[string]time.Time) string {
	var out []string
	for _, n := range names {
		if _, ok := have[n]; !ok {
			out = append(out, n)
			if len(out) == 3 {
				break
			}
		}
	}
	return strings.Join(out, ", ")
}

// WaitStopped polls until no pod in names (namespace ns) has a RUNNING
// container or a READY sandbox, and returns when that was first seen.
func (c *Client) WaitStopped(ctx context.Context, ns string, names []string, poll time.Duration) (time.Time, error) {
	set := nameSet(names)
	return waitNone(ctx, poll, "stop", len(names), func() (int, error) { return c.countActive(ctx, ns, set) })
}

// WaitGone polls until no sandbox of a pod in names (namespace ns) is
// left in any state: the agent has removed the pods, not only stopped
// them. The harness waits for it, untimed, after timing a removal, so
// that an agent's clean-up does not run into the next measurement.
func (c *Client) WaitGone(ctx context.Context, ns string, names []string, poll time.Duration) error {
	set := nameSet(names)
	_, err := waitNone(ctx, poll, "be removed", len(names), func() (int, error) { return c.countSandboxes(ctx, ns, set) })
	return err
}

func nameSet(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// waitNone calls count every poll until it reports 0 and returns when that
// was seen; on ctx's end, an error saying what was left of n pods to do
// what.
func waitNone(ctx context.Context, poll time.Duration, what string, n int, count func() (int, error)) (time.Time, error) {
	for {
		left, err := count()
		now := time.Now()
		if err == nil && left == 0 {
			return now, nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return now, fmt.Errorf("wait for %d pods to %s: %w when %w", n, what, err, ctx.Err())
			}
			return now, fmt.Errorf("wait for %d pods to %s: %d left when %w", n, what, left, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// countSandboxes counts the sandboxes, in any state, of the pods in set.
func (c *Client) countSandboxes(ctx context.Context, ns string, set map[string]bool) (int, error) {
	resp, err := c.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{LabelPodNamespace: ns},
	}})
	if err != nil {
		return -1, fmt.Errorf("list sandboxes: %w", err)
	}
	n := 0
	for _, s := range resp.Items {
		if set[s.Metadata.GetName()] || set[s.Labels[LabelPodName]] {
			n++
		}
	}
	return n, nil
}

func (c *Client) countActive(ctx context.Context, ns string, set map[string]bool) (int, error) {
	sel := map[string]string{LabelPodNamespace: ns}
	sbs, err := c.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}, LabelSelector: sel,
	}})
	if err != nil {
		return -1, fmt.Errorf("list sandboxes: %w", err)
	}
	ctrs, err := c.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}, LabelSelector: sel,
	}})
	if err != nil {
		return -1, fmt.Errorf("list containers: %w", err)
	}
	n := 0
	for _, s := range sbs.Items {
		if set[s.Metadata.GetName()] || set[s.Labels[LabelPodName]] {
			n++
		}
	}
	for _, ctr := range ctrs.Containers {
		if set[ctr.Labels[LabelPodName]] {
			n++
		}
	}
	return n, nil
}

// RemoveSandboxes stops and removes every sandbox for which remove
// returns true, with its containers. A sandbox that is already gone (its
// agent removed it meanwhile) is skipped; other errors do not stop the
// others from being removed and are returned together. Used to clean up
// after the floor and the kubelet, and at the very end.
func (c *Client) RemoveSandboxes(ctx context.Context, remove func(*runtimeapi.PodSandbox) bool) (int, error) {
	resp, err := c.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return 0, fmt.Errorf("list sandboxes: %w", err)
	}
	var ids, names []string
	for _, s := range resp.Items {
		if remove(s) {
			ids, names = append(ids, s.Id), append(names, s.Metadata.GetName())
		}
	}
	var (
		mu   sync.Mutex
		n    int
		errs []error
	)
	// A few at a time: the runtime tears pods down faster that way than one
	// by one, and all at once is slower again (density floor: 51 s unbounded,
	// 39-42 s with 2-8 workers for 110 pods).
	_ = forEach(len(ids), removeParallelism, func(i int) error {
		err := c.removeSandbox(ctx, ids[i], names[i])
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		} else {
			n++
		}
		return nil
	})
	return n, errors.Join(errs...)
}

// removeParallelism is how many sandboxes RemoveSandboxes removes at once.
const removeParallelism = 4

func (c *Client) removeSandbox(ctx context.Context, id, name string) error {
	if _, err := c.RT.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); ignoreNotFound(err) != nil {
		return fmt.Errorf("stop sandbox %s (%s): %w", id, name, err)
	}
	if _, err := c.RT.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); ignoreNotFound(err) != nil {
		return fmt.Errorf("remove sandbox %s (%s): %w", id, name, err)
	}
	return nil
}

func ignoreNotFound(err error) error {
	if status.Code(err) == codes.NotFound {
		return nil
	}
	return err
}

// ContainerID returns the ID of the running container named container in
// pod name (namespace ns).
func (c *Client) ContainerID(ctx context.Context, ns, pod, container string) (*runtimeapi.Container, error) {
	resp, err := c.RT.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{LabelPodNamespace: ns, LabelPodName: pod, LabelContainer: container},
	}})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s/%s: %w", ns, pod, err)
	}
	if len(resp.Containers) == 0 {
		return nil, fmt.Errorf("pod %s/%s has no running container %q", ns, pod, container)
	}
	return resp.Containers[0], nil
}

// LogPath returns the CRI log file of a container.
func (c *Client) LogPath(ctx context.Context, id string) (string, error) {
	st, err := c.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return "", fmt.Errorf("status of container %s: %w", id, err)
	}
	return st.Status.GetLogPath(), nil
}

// WaitLogLine polls the CRI log file at path until a line contains substr
// and returns the line's CRI timestamp (written by the runtime when it read
// the line from the container's stdout).
func WaitLogLine(ctx context.Context, path, substr string, poll time.Duration) (time.Time, error) {
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			if ts, ok, perr := FindLogLine(string(data), substr); perr != nil {
				return time.Time{}, fmt.Errorf("log %s: %w", path, perr)
			} else if ok {
				return ts, nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("wait for %q in %s: %w", substr, path, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// FindLogLine returns the timestamp of the first CRI log line
// ("<RFC3339Nano> <stream> <P|F> <text>") whose text contains substr.
func FindLogLine(log, substr string) (time.Time, bool, error) {
	for line := range strings.SplitSeq(log, "\n") {
		f := strings.SplitN(line, " ", 4)
		if len(f) < 4 || !strings.Contains(f[3], substr) {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil {
			return time.Time{}, false, fmt.Errorf("CRI log timestamp %q: %w", f[0], err)
		}
		return ts, true, nil
	}
	return time.Time{}, false, nil
}
