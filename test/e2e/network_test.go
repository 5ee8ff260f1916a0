package e2e

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
)

// podCIDR is the managed containerd's CNI bridge range.
const podCIDR = "10.88.0.0/16"

func sleeperPod(name string, hostNetwork bool) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: %t
  terminationGracePeriodSeconds: 10
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
`, name, hostNetwork, busyboxImage, sleepLoop)
}

// interfaceNames parses the interface names out of /proc/net/dev.
func interfaceNames(procNetDev string) []string {
	var names []string
	for _, line := range strings.Split(procNetDev, "\n") {
		name, _, ok := strings.Cut(line, ":")
		if ok && !strings.Contains(name, "|") {
			names = append(names, strings.TrimSpace(name))
		}
	}
	slices.Sort(names)
	return names
}

func TestHostNetworkPodUsesNodeNetwork_A52(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "hostnet.yaml", sleeperPod("hostnet", true))
	pod := PodName("hostnet")
	p := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)
	if p.Status.PodIP == "" || p.Status.PodIP != p.Status.HostIP {
		t.Errorf("hostNetwork pod: podIP %q hostIP %q, want equal and set", p.Status.PodIP, p.Status.HostIP)
	}

	app := e.PodContainer(t, pod, "app")
	inPod := interfaceNames(e.Exec(t, app.ID, "cat", "/proc/net/dev"))
	host, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range host {
		if !slices.Contains(inPod, ifc.Name) {
			t.Errorf("host interface %s not visible in the hostNetwork container (it sees %v)", ifc.Name, inPod)
		}
	}
}

func TestPodGetsIPFromBridgeRange_A52(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "podnet.yaml", sleeperPod("podnet", false))
	pod := PodName("podnet")
	p := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)

	_, cidr, err := net.ParseCIDR(podCIDR)
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(p.Status.PodIP)
	if ip == nil || !cidr.Contains(ip) {
		t.Fatalf("podIP %q, want an address in %s", p.Status.PodIP, podCIDR)
	}
	if p.Status.HostIP == "" || p.Status.HostIP == p.Status.PodIP {
		t.Errorf("hostIP %q, want the node's address, distinct from podIP %s", p.Status.HostIP, p.Status.PodIP)
	}
	if len(p.Status.PodIPs) == 0 || p.Status.PodIPs[0].IP != p.Status.PodIP {
		t.Errorf("podIPs %v, want %s first", p.Status.PodIPs, p.Status.PodIP)
	}

	app := e.PodContainer(t, pod, "app")
	if got := interfaceNames(e.Exec(t, app.ID, "cat", "/proc/net/dev")); !slices.Equal(got, []string{"eth0", "lo"}) {
		t.Errorf("pod network namespace has interfaces %v, want its own [eth0 lo]", got)
	}
	if addrs := e.Exec(t, app.ID, "ip", "-o", "-4", "addr", "show", "eth0"); !strings.Contains(addrs, " "+p.Status.PodIP+"/") {
		t.Errorf("eth0 in the pod has %q, want podIP %s", addrs, p.Status.PodIP)
	}
}
