package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterDNS_G11: with --cluster-dns, a ClusterFirst pod's resolv.conf
// has only the cluster's server, the cluster searches before the node's,
// and ndots:5; a host-network pod keeps the node's (--resolv-conf). Without
// --cluster-dns, a ClusterFirst pod gets the node's and the pod the
// kubelet's MissingClusterDNS warning.
func TestClusterDNS_G11(t *testing.T) {
	e := NewEnv(t)
	resolv := filepath.Join(e.Dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.org\noptions timeout:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resolvIn := func(pod string) string {
		t.Helper()
		e.WaitForPod(t, PodName(pod), runningAndReady, podStartTimeout)
		return e.Exec(t, e.PodContainer(t, PodName(pod), "app").ID, "cat", "/etc/resolv.conf")
	}
	expect := func(pod, got string, want []string, unwanted ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: resolv.conf\n%s\nwant %q", pod, got, w)
			}
		}
		for _, u := range unwanted {
			if strings.Contains(got, u) {
				t.Errorf("%s: resolv.conf\n%s\nhas %q", pod, got, u)
			}
		}
	}

	e.StartAgent(t, AgentOptions{Args: []string{"--cluster-dns", "10.96.0.10", "--resolv-conf", resolv}})
	e.WriteManifest(t, "cluster.yaml", sleeperPod("cluster", false))
	e.WriteManifest(t, "hostnet.yaml", sleeperPod("hostnet", true))
	expect("cluster", resolvIn("cluster"), []string{"nameserver 10.96.0.10",
		"search " + namespace + ".svc.cluster.local svc.cluster.local cluster.local example.org", "options ndots:5"},
		"192.0.2.53", "timeout:1")
	expect("hostnet", resolvIn("hostnet"), []string{"nameserver 192.0.2.53", "search example.org", "options timeout:1"}, "10.96.0.10")
	if ev := findEvent(e.Events(t, e.WaitForPod(t, PodName("cluster"), runningAndReady, podStartTimeout)), "", "MissingClusterDNS", ""); ev != nil {
		t.Errorf("cluster pod: MissingClusterDNS event %q with --cluster-dns", ev.Message)
	}

	e.StopAgent(t)
	e.StartAgent(t, AgentOptions{Args: []string{"--resolv-conf", resolv}})
	e.WriteManifest(t, "fallback.yaml", sleeperPod("fallback", false))
	expect("fallback", resolvIn("fallback"), []string{"nameserver 192.0.2.53", "search example.org"}, "10.96.0.10", "ndots:5")
	p := e.WaitForPod(t, PodName("fallback"), runningAndReady, podStartTimeout)
	want := `pod: "` + kubeletPodDesc(p) + `". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
	if ev := findEvent(e.Events(t, p), "", "MissingClusterDNS", ""); ev == nil || ev.Message != want || ev.Type != "Warning" {
		t.Errorf("fallback pod: MissingClusterDNS event %+v, want a Warning %q", ev, want)
	}
}
