package nodeip

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestNodeIPv4(t *testing.T) {
	addr := func(typ corev1.NodeAddressType, a string) corev1.NodeAddress {
		return corev1.NodeAddress{Type: typ, Address: a}
	}
	for _, tc := range []struct {
		name  string
		addrs []corev1.NodeAddress
		want  string
	}{
		{"internal first", []corev1.NodeAddress{addr(corev1.NodeExternalIP, "203.0.113.1"), addr(corev1.NodeInternalIP, "192.0.2.2")}, "192.0.2.2"},
		{"IPv4 of dual stack", []corev1.NodeAddress{addr(corev1.NodeInternalIP, "fd00::2"), addr(corev1.NodeInternalIP, "192.0.2.2")}, "192.0.2.2"},
		{"external without internal", []corev1.NodeAddress{addr(corev1.NodeHostName, "n1"), addr(corev1.NodeExternalIP, "203.0.113.1")}, "203.0.113.1"},
		{"IPv6 only", []corev1.NodeAddress{addr(corev1.NodeInternalIP, "fd00::2")}, "<nil>"},
		{"none", nil, "<nil>"},
	} {
		node := &corev1.Node{Status: corev1.NodeStatus{Addresses: tc.addrs}}
		if got := IPv4(node).String(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestWait: the address once the node has one; the context's end
// otherwise.
func TestWait(t *testing.T) {
	calls := 0
	get := func(string) (*corev1.Node, error) {
		calls++
		if calls < 2 {
			return nil, errors.New("not found")
		}
		return &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.2"}}}}, nil
	}
	ip, err := Wait(context.Background(), "n1", get)
	if err != nil || ip.String() != "192.0.2.2" {
		t.Errorf("Wait = %v, %v", ip, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Wait(ctx, "n1", func(string) (*corev1.Node, error) { return &corev1.Node{}, nil }); err == nil {
		t.Error("no address and a cancelled context: no error")
	}
	if _, err := Wait(context.Background(), "", get); err == nil {
		t.Error("no node name: no error")
	}
}

func TestWaitSynced(t *testing.T) {
	node := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.7"}}}}
	get := func(string) (*corev1.Node, error) { return node, nil }
	got, err := WaitSynced(context.Background(), []cache.InformerSynced{func() bool { return true }}, "n", get)
	if err != nil || got != netip.MustParseAddr("192.0.2.7") {
		t.Fatalf("WaitSynced = %v, %v; want 192.0.2.7", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WaitSynced(ctx, []cache.InformerSynced{func() bool { return false }}, "n", get); !errors.Is(err, context.Canceled) {
		t.Fatalf("never synced, ctx ended: err = %v, want context.Canceled", err)
	}
}

func TestClients(t *testing.T) {
	extra := []netip.Prefix{netip.MustParsePrefix("10.88.0.0/16")}
	got := Clients(extra, netip.MustParseAddr("192.0.2.7"))
	want := []netip.Prefix{netip.MustParsePrefix("10.88.0.0/16"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("127.0.0.0/8")}
	if !slices.Equal(got, want) {
		t.Fatalf("Clients = %v, want %v", got, want)
	}
	if len(extra) != 1 {
		t.Fatalf("Clients changed its argument: %v", extra)
	}
}
