package pod

import (
	"context"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// nodeGetter is a rest.Getter of fixed Nodes.
type nodeGetter map[string]*corev1.Node

func (g nodeGetter) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if n, ok := g[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

func testNode(name string, port int32, addrs ...corev1.NodeAddress) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Addresses = addrs
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	return n
}

// TestKubeletURL: a node's kubelet is reached at its preferred status
// address (InternalIP, ExternalIP, Hostname) and its kubelet port (10250
// when unset), except the local node with a LocalHost (the shim's
// --node-kubelet-host): that host, the node's port.
func TestKubeletURL(t *testing.T) {
	internal := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}
	external := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.9"}
	hostname := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-a.example"}
	nodes := nodeGetter{
		"node-a":    testNode("node-a", 10250, hostname, external, internal),
		"node-b":    testNode("node-b", 0, hostname),
		"node-port": testNode("node-port", 11250, internal),
		"bare":      testNode("bare", 0),
	}
	for _, tc := range []struct {
		name                 string
		localNode, localHost string
		node                 string
		want                 string // host:port; "" for an error
	}{
		{"no override: InternalIP first", "", "", "node-a", "10.0.0.5:10250"},
		{"no override: hostname, default port", "", "", "node-b", "node-a.example:10250"},
		{"local node overridden", "node-a", "127.0.0.1", "node-a", "127.0.0.1:10250"},
		{"local node overridden keeps its port", "node-port", "127.0.0.1", "node-port", "127.0.0.1:11250"},
		{"local node without addresses", "bare", "127.0.0.1", "bare", "127.0.0.1:10250"},
		{"IPv6 host", "node-a", "::1", "node-a", "[::1]:10250"},
		{"other node unaffected", "node-a", "127.0.0.1", "node-b", "node-a.example:10250"},
		{"host without node name: no override", "", "127.0.0.1", "node-a", "10.0.0.5:10250"},
		{"node name without host: no override", "node-a", "", "node-a", "10.0.0.5:10250"},
		{"no address, no override: error", "node-a", "127.0.0.1", "bare", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &Kubelets{Nodes: nodes, LocalNode: tc.localNode, LocalHost: tc.localHost}
			u, err := k.kubeletURL(context.Background(), tc.node, "/containerLogs/ns/p/c", url.Values{"follow": {"true"}})
			if tc.want == "" {
				if err == nil {
					t.Fatalf("url %v, want an error", u)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.Scheme != "https" || u.Host != tc.want || u.Path != "/containerLogs/ns/p/c" || u.RawQuery != "follow=true" {
				t.Errorf("url %v, want https://%s/containerLogs/ns/p/c?follow=true", u, tc.want)
			}
		})
	}
}
