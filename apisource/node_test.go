package apisource

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/internal/nodestatus"
)

// TestNodeManagerWatchesNode: with an Informer, a label set on the Node
// through the API (the DaemonSet conformance test's) is in Node() at
// once, with no status update due; a write's older answer does not
// replace a newer copy, the watch's copies always do; Run's informer has
// stopped when Run returns.
func TestNodeManagerWatchesNode(t *testing.T) {
	w := watch.NewFake()
	inf := watchedInformer(w, &v1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, &v1.Node{})
	api := &fakeAPI{}
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	n := NewNodeManager(NodeConfig{API: api, Registration: nodestatus.Registration{Name: "n1", Hostname: "n1"}, Register: true,
		Informer: inf, Clock: clk, Logger: discard, UpdateFrequency: time.Hour,
		Facts: func(context.Context) (nodestatus.Facts, nodestatus.Health) {
			return nodestatus.Facts{Capacity: v1.ResourceList{}, Allocatable: v1.ResourceList{}}, nodestatus.Health{}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.Run(ctx) }()
	<-n.Registered()

	node := func(rv, color string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: rv, Labels: map[string]string{"color": color}}}
	}
	w.Add(node("100", "blue"))
	waitLabel(t, n, "blue")
	w.Modify(node("101", "green"))
	waitLabel(t, n, "green")
	w.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other", ResourceVersion: "102", Labels: map[string]string{"color": "red"}}})
	n.setNode(node("99", "stale")) // an older answer of a write
	if got := n.Node().Labels["color"]; got != "green" {
		t.Errorf("after an older answer: color %q, want green kept", got)
	}
	w.Modify(node("103", "yellow"))
	waitLabel(t, n, "yellow")
	w.Modify(node("5", "restored")) // the API server's store restored: older, yet the watch's
	waitLabel(t, n, "restored")

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if !w.IsStopped() {
		t.Error("the informer's watch is still open after Run returned")
	}
}

// waitLabel waits until n's Node has the color label want.
func waitLabel(t *testing.T, n *NodeManager, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := ""
		if node := n.Node(); node != nil {
			got = node.Labels["color"]
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Node's color label %q, want %q", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOlderVersion: numbers compare; anything else is never older.
func TestOlderVersion(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"9", "10", true}, {"10", "9", false}, {"10", "10", false}, {"", "10", false}, {"x", "10", false}, {"10", "", false},
	} {
		if got := olderVersion(c.a, c.b); got != c.want {
			t.Errorf("olderVersion(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
