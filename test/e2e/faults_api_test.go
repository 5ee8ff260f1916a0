package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestFaultsAPIServerFlapping: the node's connection to a real API server
// goes down and up again, 8 s each way, over and over. No pod is
// restarted or reported not Ready, the node's Ready condition never
// changes, and what happened meanwhile (a crash-looping container's
// restarts) reaches the API server once it stays up.
func TestFaultsAPIServerFlapping(t *testing.T) {
	e, sc := faultsEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	proxy := startAPIProxy(t, strings.TrimPrefix(c.Server(), "https://"))
	e.StartAgent(t, AgentOptions{Args: []string{"--kubeconfig", proxyKubeconfig(t, e, c, proxy)}})
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	t.Cleanup(func() { proxy.setUp(true) }) // before deleteAPIPods
	steady := []string{"steady0", "steady1", "steady2"}
	for _, name := range steady {
		if _, err := cs.CoreV1().Pods(namespace).Create(ctx, apiPod(name, 2, "sleep 100000"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, apiPod("crasher", 2, "sleep 3; exit 1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, name := range steady {
		waitAPIPod(t, cs, name, "Ready", podReady)
		ids[name] = e.PodContainer(t, name, "app").ID
	}
	readyBefore := nodeReadyCondition(t, waitNodeReady(t, cs))
	stopWatch := watchNotReady(t, cs, "crasher")
	for range sc.apiFlaps {
		proxy.setUp(false)
		time.Sleep(8 * time.Second)
		proxy.setUp(true)
		time.Sleep(8 * time.Second)
	}
	// Status catches up: the API server's restart count of the crashing
	// container reaches the agent's (which only grows).
	caught := time.Now()
	var local, remote int32
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(namespace).Get(ctx, "crasher", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		remote = p.Status.ContainerStatuses[0].RestartCount
		lp, err := e.findPod("crasher")
		if err != nil || lp == nil || len(lp.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		local = lp.Status.ContainerStatuses[0].RestartCount
		return local > 0 && remote >= local, nil
	})
	if err != nil {
		t.Errorf("crasher's restart count: %d in the API server, %d on the node, after 1 min", remote, local)
	}
	if flips := stopWatch(); len(flips) > 0 {
		t.Errorf("pods reported not Ready while the API server flapped: %v", flips)
	}
	for name, id := range ids {
		if got := e.PodContainer(t, name, "app").ID; got != id {
			t.Errorf("pod %s: container %s, want %s kept", name, got, id)
		}
	}
	if after := nodeReadyCondition(t, waitNodeReady(t, cs)); after.Status != v1.ConditionTrue || !after.LastTransitionTime.Equal(&readyBefore.LastTransitionTime) {
		t.Errorf("node Ready after the flapping: %+v; before: %+v", after, readyBefore)
	}
	e.report(t, faultRecord{scenario: "API server connection flapping (8 s down, 8 s up)", scale: sc.name, pods: len(steady) + 1,
		recovery: time.Since(caught).Round(time.Second).String() + " for the status to catch up",
		notes:    fmt.Sprintf("%d flaps; no pod or node Ready flip, containers kept; crasher's %d restarts reached the API server", sc.apiFlaps, local)})
}

// watchNotReady watches the namespace's pods in the API server and
// collects every event of a pod not Ready, but those of the pods named in
// except; the returned stop ends the watch and returns them.
func watchNotReady(t *testing.T, cs kubernetes.Interface, except ...string) (stop func() []string) {
	t.Helper()
	w, err := cs.CoreV1().Pods(namespace).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var flips []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*v1.Pod); ok && !slices.Contains(except, p.Name) && !podReady(p) {
				flips = append(flips, fmt.Sprintf("%s %s phase=%s", ev.Type, p.Name, p.Status.Phase))
			}
		}
	}()
	return func() []string {
		w.Stop()
		<-done
		return flips
	}
}
