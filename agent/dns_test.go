package agent

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// TestMissingClusterDNSEvents: a pod whose DNS fell back (Config.DNS's
// warning) gets the kubelet's MissingClusterDNS warning on the node and on
// itself when its sandbox is created, and the sandbox gets the DNS
// config; a pod without a warning gets no event.
func TestMissingClusterDNSEvents(t *testing.T) {
	rt := fake.New(time.Now)
	cfg := testConfig(t, rt)
	const warning = "no cluster DNS"
	cfg.DNS = func(pod *v1.Pod) (*runtime.DNSConfig, string, error) {
		if pod.Name == "fallback" {
			return &runtime.DNSConfig{Servers: []string{"192.0.2.53"}}, warning, nil
		}
		return &runtime.DNSConfig{Servers: []string{"10.96.0.10"}}, "", nil
	}
	h := runTestAgent(t, cfg)
	fallback, cluster := testPod("Always", nil, "app"), testPod("Always", nil, "app")
	fallback.Name, fallback.UID = "fallback", "uid-f"
	cluster.Name, cluster.UID = "cluster", "uid-c"
	h.src.ch <- []*v1.Pod{fallback, cluster}
	h.eventually("both pods Running", func() bool { return h.phase("uid-f") == v1.PodRunning && h.phase("uid-c") == v1.PodRunning })
	var got []string
	for _, ev := range h.agent.events.List() {
		if ev.Reason == EventMissingClusterDNS {
			if ev.Type != v1.EventTypeWarning {
				t.Errorf("event %+v: want a Warning", ev)
			}
			got = append(got, ev.InvolvedObject.Kind+" "+ev.InvolvedObject.Name+": "+ev.Message)
		}
	}
	slices.Sort(got)
	want := []string{"Node node: " + warning, `Pod fallback: pod: "fallback_default(uid-f)". ` + warning}
	if !slices.Equal(got, want) {
		t.Errorf("MissingClusterDNS events %q, want %q", got, want)
	}
	for _, uid := range []string{"uid-f", "uid-c"} {
		spec, ok := rt.SandboxSpecOf(uid)
		if !ok || spec.DNS == nil || len(spec.DNS.Servers) != 1 {
			t.Errorf("pod %s: sandbox DNS %+v (%v), want Config.DNS's", uid, spec, ok)
		}
	}
}
