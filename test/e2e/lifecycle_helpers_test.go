package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/server"
)

// Helpers of the container lifecycle tests (backoff, probes, hooks,
// sidecars, deadlines, termination messages).

// lifecycleTimeout guards waits for things that take a few probe periods or
// back-off steps; like the other timeouts it is a failure guard only.
const lifecycleTimeout = 90 * time.Second

// kubeletPodDesc formats a pod as the kubelet does in messages:
// name_namespace(uid).
func kubeletPodDesc(p *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", p.Name, p.Namespace, p.UID)
}

// Events returns the agent's events about pod p (GET /events with the
// selector kubectl describe uses), oldest first.
func (e *Env) Events(t *testing.T, p *v1.Pod) []v1.Event {
	t.Helper()
	q := url.Values{"fieldSelector": {server.PodEventSelector(p.Namespace, p.Name, p.UID)}}
	code, body, err := e.get("/events?" + q.Encode())
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /events: status %d, error %v: %s", code, err, body)
	}
	var list v1.EventList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("decode /events: %v", err)
	}
	return list.Items
}

// findEvent returns the first event with reason whose message contains
// msgPart and whose fieldPath is fieldPath ("" matches any), or nil.
func findEvent(events []v1.Event, fieldPath, reason, msgPart string) *v1.Event {
	for i := range events {
		ev := &events[i]
		if ev.Reason == reason && strings.Contains(ev.Message, msgPart) &&
			(fieldPath == "" || ev.InvolvedObject.FieldPath == fieldPath) {
			return ev
		}
	}
	return nil
}

// WaitForEvent polls the events of pod p until one matches (see findEvent)
// and returns it.
func (e *Env) WaitForEvent(t *testing.T, p *v1.Pod, fieldPath, reason, msgPart string, timeout time.Duration) *v1.Event {
	t.Helper()
	var ev *v1.Event
	eventually(t, timeout, func() (bool, string) {
		events := e.Events(t, p)
		ev = findEvent(events, fieldPath, reason, msgPart)
		return ev != nil, fmt.Sprintf("pod %s: no event %s %q at %q; events:\n%s",
			p.Name, reason, msgPart, fieldPath, eventSummary(events))
	})
	return ev
}

// eventSummary lists events one a line, for failure messages.
func eventSummary(events []v1.Event) string {
	var b strings.Builder
	for _, ev := range events {
		fmt.Fprintf(&b, "  %s %s %s x%d: %s\n", ev.Type, ev.Reason, ev.InvolvedObject.FieldPath, ev.Count, ev.Message)
	}
	return b.String()
}

// ctr is the spec path of app container name, for event field paths.
func ctr(name string) string { return "spec.containers{" + name + "}" }

// statusOf returns the named container's status in p or fails the test.
func statusOf(t *testing.T, p *v1.Pod, name string) *v1.ContainerStatus {
	t.Helper()
	st := containerStatus(p, name)
	if st == nil {
		t.Fatalf("pod %s has no status for container %s:\n%s", p.Name, name, dump(p.Status))
	}
	return st
}

// containerCond holds when the named container's status satisfies cond.
func containerCond(name string, cond func(*v1.ContainerStatus) bool) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		st := containerStatus(p, name)
		return st != nil && cond(st)
	}
}

// waitingReason holds when the container is Waiting with reason.
func waitingReason(reason string) func(*v1.ContainerStatus) bool {
	return func(st *v1.ContainerStatus) bool {
		return st.State.Waiting != nil && st.State.Waiting.Reason == reason
	}
}

// restartCountAtLeast holds when the container restarted at least n times.
func restartCountAtLeast(n int32) func(*v1.ContainerStatus) bool {
	return func(st *v1.ContainerStatus) bool { return st.RestartCount >= n }
}

// logEntries parses a CRI log file; a missing file gives no entries and a
// line being written (not yet parseable) is skipped.
func logEntries(t *testing.T, path string) []podlogs.Entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("read container log: %v", err)
	}
	return parseLogEntries(data)
}

// parseLogEntries parses the lines of a CRI log file.
func parseLogEntries(data []byte) []podlogs.Entry {
	var out []podlogs.Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		if ent, err := podlogs.ParseLine(line); err == nil {
			out = append(out, ent)
		}
	}
	return out
}

// lineTime returns the time of the first line of a CRI log file's
// contents data containing part, and whether there is one.
func lineTime(data []byte, part string) (time.Time, bool) {
	for _, ent := range parseLogEntries(data) {
		if strings.Contains(string(ent.Content), part) {
			return ent.Time, true
		}
	}
	return time.Time{}, false
}

// logText returns the contents of a CRI log file without the CRI prefixes.
func logText(t *testing.T, path string) string {
	t.Helper()
	var b strings.Builder
	for _, ent := range logEntries(t, path) {
		b.Write(ent.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

// postPod sends POST http://podIP:port/path from the host, over the pod
// network bridge, and fails the test unless it answers 200.
func postPod(t *testing.T, podIP string, port int, pathAndQuery string) {
	t.Helper()
	u := fmt.Sprintf("http://%s:%d%s", podIP, port, pathAndQuery)
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Post(u, "text/plain", nil)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: status %d", u, resp.StatusCode)
	}
}

// attemptRecord is what containerTracker saw of one container attempt.
type attemptRecord struct {
	ID                   string
	StartedAt, Finished  time.Time
	ExitCode             int32
	SeenRunning, Exited  bool
	LastSeen, FirstSeenX time.Time // FirstSeenX: first poll that saw it exited
}

// containerTracker remembers every attempt of one container of one pod as
// seen through CRI, because the agent prunes old attempts.
type containerTracker struct {
	e        *Env
	labels   map[string]string
	attempts map[uint32]*attemptRecord
}

func newContainerTracker(e *Env, podName, container string) *containerTracker {
	labels := podLabels(podName)
	labels["io.kubernetes.container.name"] = container
	return &containerTracker{e: e, labels: labels, attempts: map[uint32]*attemptRecord{}}
}

// poll records the current state of every attempt the runtime holds.
func (c *containerTracker) poll(t *testing.T) {
	t.Helper()
	now := time.Now()
	for _, ct := range c.e.Containers(t, c.labels) {
		st := c.e.ContainerStatus(t, ct.ID)
		if st == nil {
			continue
		}
		r := c.attempts[ct.Attempt]
		if r == nil {
			r = &attemptRecord{ID: ct.ID}
			c.attempts[ct.Attempt] = r
		}
		r.LastSeen = now
		if !st.StartedAt.IsZero() {
			r.StartedAt = st.StartedAt
		}
		switch st.State {
		case runtime.ContainerRunning:
			r.SeenRunning = true
		case runtime.ContainerExited:
			if !r.Exited {
				r.FirstSeenX = now
			}
			r.Exited, r.Finished, r.ExitCode = true, st.FinishedAt, st.ExitCode
		}
	}
}

// until polls every 100 ms until done holds, failing after timeout.
func (c *containerTracker) until(t *testing.T, timeout time.Duration, what string, done func() bool) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
		c.poll(t)
		return done(), fmt.Sprintf("%s; attempts seen: %s", what, dump(c.attempts))
	})
}

// podSpec renders a pod manifest: name, spec-level lines (flow-style YAML,
// e.g. "terminationGracePeriodSeconds: 5"), then containers and init
// containers rendered by container().
func podSpec(name string, specLines []string, initContainers, containers []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n", name)
	for _, l := range specLines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if len(initContainers) > 0 {
		b.WriteString("  initContainers:\n")
		for _, c := range initContainers {
			b.WriteString(c)
		}
	}
	b.WriteString("  containers:\n")
	for _, c := range containers {
		b.WriteString(c)
	}
	return b.String()
}

// container renders one container list entry. command and args are
// written as JSON arrays when set; fields are extra flow-style YAML lines
// such as `livenessProbe: {exec: {command: ["true"]}, periodSeconds: 1}`.
func container(name, image string, command, args []string, fields ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: %s\n    image: %s\n    imagePullPolicy: IfNotPresent\n", name, image)
	if len(command) > 0 {
		fmt.Fprintf(&b, "    command: %s\n", jsonList(command))
	}
	if len(args) > 0 {
		fmt.Fprintf(&b, "    args: %s\n", jsonList(args))
	}
	for _, f := range fields {
		fmt.Fprintf(&b, "    %s\n", f)
	}
	return b.String()
}

// testserver renders a test server container with its own ports (0: off).
func testserver(name string, httpPort, tcpPort, grpcPort int, extraArgs []string, fields ...string) string {
	args := append([]string{
		fmt.Sprintf("--http-port=%d", httpPort),
		fmt.Sprintf("--tcp-port=%d", tcpPort),
		fmt.Sprintf("--grpc-port=%d", grpcPort),
	}, extraArgs...)
	return container(name, testserverImage, nil, args, fields...)
}

// sleeper renders a busybox container that runs until SIGTERM.
func sleeper(name string, fields ...string) string {
	return container(name, busyboxImage, []string{"sh", "-c", sleepLoop}, nil, fields...)
}

func jsonList(items []string) string {
	b, err := json.Marshal(items)
	if err != nil {
		panic(err) // []string always marshals
	}
	return string(b)
}
