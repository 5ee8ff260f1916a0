package agent

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHostPortsFailure: a pod whose host port an admitted pod binds is
// rejected with the kubelet's NodePorts reason, with the scheduler's
// rules for host IPs (0.0.0.0 takes every IP), protocols (TCP by default)
// and sidecars (their ports count; other init containers' do not).
func TestHostPortsFailure(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := func(name string, ports ...v1.ContainerPort) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Ports: ports}}}}
	}
	port := func(ip string, proto v1.Protocol, hp int32) v1.ContainerPort {
		return v1.ContainerPort{ContainerPort: 80, HostIP: ip, Protocol: proto, HostPort: hp}
	}
	sidecar := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{
		{Name: "side", RestartPolicy: &always, Ports: []v1.ContainerPort{port("", "", 9000)}},
		{Name: "init", Ports: []v1.ContainerPort{port("", "", 9001)}},
	}}}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
		reject   bool
	}{
		{"no host ports", pod("a", v1.ContainerPort{ContainerPort: 80}), []*v1.Pod{pod("b", port("", "", 80))}, false},
		{"same port, defaults", pod("a", port("", "", 8080)), []*v1.Pod{pod("b", port("", v1.ProtocolTCP, 8080))}, true},
		{"same port, other protocol", pod("a", port("", v1.ProtocolUDP, 8080)), []*v1.Pod{pod("b", port("", "", 8080))}, false},
		{"other IPs", pod("a", port("127.0.0.1", "", 8080)), []*v1.Pod{pod("b", port("127.0.0.2", "", 8080))}, false},
		{"any IP taken by one IP", pod("a", port("", "", 8080)), []*v1.Pod{pod("b", port("127.0.0.2", "", 8080))}, true},
		{"one IP taken by any IP", pod("a", port("127.0.0.1", "", 8080)), []*v1.Pod{pod("b", port("0.0.0.0", "", 8080))}, true},
		{"a sidecar's port", pod("a", port("", "", 9000)), []*v1.Pod{sidecar}, true},
		{"an init container's port", pod("a", port("", "", 9001)), []*v1.Pod{sidecar}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := hostPortsFailure(tc.pod, tc.admitted)
			if (f != nil) != tc.reject {
				t.Fatalf("failure %+v, want rejected %v", f, tc.reject)
			}
			if f != nil && (f.Reason != "NodePorts" ||
				f.Message != "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports") {
				t.Errorf("failure %+v", f)
			}
		})
	}
}

// TestAdmissionRejectsHostPortConflict: a pod asking for a host port a
// running pod binds fails with NodePorts and gets no sandbox (the
// StatefulSet conformance test "Should recreate evicted statefulset"
// relies on it); a new version of the first pod is not rejected by the old
// one's ports.
func TestAdmissionRejectsHostPortConflict(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgentResources(t, rt, nil, nil)
	first := testPod("Always", nil, "app")
	first.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 21017}}
	h.src.ch <- []*v1.Pod{first}
	h.eventually("first pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	second := testPod("Always", nil, "app")
	second.Name, second.UID = "second", "uid2"
	second.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 21017}}
	h.src.ch <- []*v1.Pod{first, second}
	h.eventually("second pod Failed", func() bool { return h.phase("uid2") == v1.PodFailed })
	if p := h.pod("uid2"); p.Status.Reason != "NodePorts" {
		t.Errorf("status reason %q message %q, want NodePorts", p.Status.Reason, p.Status.Message)
	}
	// A new version of the first pod (an edited static pod: same name,
	// another UID) replaces it: the old one, no longer listed, holds no
	// port against it, so it is admitted and runs once the old one
	// stopped.
	third := first.DeepCopy()
	third.UID = "uid3"
	h.src.ch <- []*v1.Pod{third}
	h.eventually("the first pod's new version Running", func() bool { return h.phase("uid3") == v1.PodRunning || h.phase("uid3") == v1.PodFailed })
	if p := h.pod("uid3"); p.Status.Phase != v1.PodRunning {
		t.Errorf("third pod: %s %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
}
