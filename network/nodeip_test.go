package network

import "testing"

func TestNodeIPs(t *testing.T) {
	ips, err := NodeIPs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ips) == 0 {
		t.Fatal("no node IPs")
	}
	for _, ip := range ips {
		if !ip.IsGlobalUnicast() && !ip.IsLoopback() {
			t.Errorf("unexpected node IP %s", ip)
		}
	}
	t.Logf("node IPs: %v", ips)
}
