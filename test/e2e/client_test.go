package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/cri"
)

// get fetches path from the agent's API over its unix socket.
func (e *Env) get(path string) (int, string, error) {
	resp, err := e.http.Get("http://skiff" + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// Pods returns the agent's GET /pods.
func (e *Env) Pods() (*v1.PodList, error) {
	code, body, err := e.get("/pods")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /pods: status %d: %s", code, body)
	}
	var list v1.PodList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		return nil, fmt.Errorf("decode /pods: %w", err)
	}
	return &list, nil
}

// findPod returns the pod called name from /pods, or nil.
func (e *Env) findPod(name string) (*v1.Pod, error) {
	list, err := e.Pods()
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].Name == name {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// WaitForPod polls /pods every 100 ms until the pod called name exists and
// cond holds for it, and returns that pod. It fails the test after timeout,
// showing the last status seen.
func (e *Env) WaitForPod(t *testing.T, name string, cond func(*v1.Pod) bool, timeout time.Duration) *v1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *v1.Pod
	var lastErr error
	for {
		pod, err := e.findPod(name)
		if err == nil && pod != nil {
			last = pod
			if cond(pod) {
				return pod
			}
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("pod %s: condition not met within %s; last error %v; last pod:\n%s",
				name, timeout, lastErr, dump(last))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitForPodGone polls /pods until no pod is called name.
func (e *Env) WaitForPodGone(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pod, err := e.findPod(name)
		if err == nil && pod == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s still listed after %s (error %v):\n%s", name, timeout, err, dump(pod))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func dump(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Pod conditions for WaitForPod.

// phaseIs holds when the pod's phase is phase.
func phaseIs(phase v1.PodPhase) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool { return p.Status.Phase == phase }
}

// runningAndReady holds when the pod runs and its Ready condition is True.
func runningAndReady(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodRunning && conditionStatus(p, v1.PodReady) == v1.ConditionTrue
}

func conditionStatus(p *v1.Pod, typ v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// containerStatus returns the status of the named (init or app) container.
func containerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// CRI returns a CRI client for the agents' runtime: the managed
// containerd, or the external one in external mode.
func (e *Env) CRI(t *testing.T) *cri.Runtime {
	t.Helper()
	if e.rt != nil {
		return e.rt
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := cri.New(ctx, e.s.criEndpoint(), 30*time.Second)
	if err != nil {
		t.Fatalf("connect to CRI at %s: %v", e.s.criEndpoint(), err)
	}
	e.rt = rt
	return rt
}

// RuntimeFeatures asks the agents' runtime what it supports, as the node
// does at start: the feature tests expect a run where it does and a
// refusal where it does not.
func (e *Env) RuntimeFeatures(t *testing.T) runtime.Features {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := e.CRI(t).Features(ctx)
	if err != nil {
		t.Fatalf("runtime features: %v", err)
	}
	return f
}

// criAll selects every container.
func criAll() runtime.ContainerFilter { return runtime.ContainerFilter{} }

// podLabels selects the objects of one pod by its kubelet labels.
func podLabels(podName string) map[string]string {
	return map[string]string{"io.kubernetes.pod.name": podName, "io.kubernetes.pod.namespace": namespace}
}

func uidLabels(uid string) map[string]string {
	return map[string]string{"io.kubernetes.pod.uid": uid}
}

// Containers lists the runtime's containers carrying labels, oldest first.
func (e *Env) Containers(t *testing.T, labels map[string]string) []*runtime.Container {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := e.CRI(t).ListContainers(ctx, runtime.ContainerFilter{Labels: labels})
	if err != nil {
		t.Fatalf("list containers %v: %v", labels, err)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].CreatedAt.Before(cs[j].CreatedAt) })
	return cs
}

// Sandboxes lists the runtime's sandboxes carrying labels.
func (e *Env) Sandboxes(t *testing.T, labels map[string]string) []*runtime.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sbs, err := e.CRI(t).ListSandboxes(ctx, labels)
	if err != nil {
		t.Fatalf("list sandboxes %v: %v", labels, err)
	}
	return sbs
}

// ContainerStatus returns the CRI status of a container ID; nil when the
// runtime no longer knows it.
func (e *Env) ContainerStatus(t *testing.T, id string) *runtime.ContainerStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := e.CRI(t).ContainerStatus(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("container status %s: %v", id, err)
	}
	return st
}

// PodContainer returns the CRI status of the newest container called
// container in pod podName; it fails the test when there is none.
func (e *Env) PodContainer(t *testing.T, podName, container string) *runtime.ContainerStatus {
	t.Helper()
	labels := podLabels(podName)
	labels["io.kubernetes.container.name"] = container
	cs := e.Containers(t, labels)
	if len(cs) == 0 {
		t.Fatalf("no container %q of pod %s in the runtime", container, podName)
	}
	st := e.ContainerStatus(t, cs[len(cs)-1].ID)
	if st == nil {
		t.Fatalf("container %q of pod %s vanished", container, podName)
	}
	return st
}

// Exec runs cmd in a container and returns its stdout; a non-zero exit
// fails the test.
func (e *Env) Exec(t *testing.T, containerID string, cmd ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := e.CRI(t).ExecSync(ctx, containerID, cmd, 30*time.Second)
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exec %v: exit %d, stderr %s", cmd, res.ExitCode, res.Stderr)
	}
	return string(res.Stdout)
}

// idSet returns the IDs of cs, sorted.
func idSet(cs []*runtime.Container) []string {
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	sort.Strings(ids)
	return ids
}

// eventually polls check every 100 ms until it reports done, failing the
// test after timeout with check's last explanation.
func eventually(t *testing.T, timeout time.Duration, check func() (done bool, why string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, why := check()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done within %s: %s", timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPodObjectsGone waits until the runtime holds no sandbox and no
// container of the pod with uid.
func (e *Env) waitPodObjectsGone(t *testing.T, uid string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
		sbs := e.Sandboxes(t, uidLabels(uid))
		cs := e.Containers(t, uidLabels(uid))
		return len(sbs) == 0 && len(cs) == 0,
			fmt.Sprintf("pod uid %s still has %d sandboxes and %d containers", uid, len(sbs), len(cs))
	})
}
