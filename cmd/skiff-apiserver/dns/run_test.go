package dns

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestUpstreams: resolv.conf's nameservers, without the cluster DNS
// itself.
func TestUpstreams(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	self := []string{"10.96.0.10:53", "192.0.2.7:10053"}
	got, err := Upstreams(write("a", "search example.org\nnameserver 192.0.2.53\nnameserver 10.96.0.10\nnameserver fd00::53\n"), self)
	if want := []string{"192.0.2.53:53", "[fd00::53]:53"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Upstreams = %v, %v; want %v", got, err, want)
	}
	if _, err := Upstreams(write("b", "nameserver 10.96.0.10\n"), self); err == nil || !strings.Contains(err.Error(), "names none but the cluster DNS") {
		t.Errorf("only the cluster DNS: err = %v", err)
	}
	if _, err := Upstreams(filepath.Join(dir, "none"), self); err == nil {
		t.Error("no resolv.conf: no error")
	}
}

func TestConfigValidate(t *testing.T) {
	cidr := netip.MustParsePrefix("10.96.0.0/12")
	ok := Config{NodeName: "n1", ServiceIP: dnsIP, Zone: "cluster.local", Port: DefaultPort}
	edit := func(f func(*Config)) Config {
		c := ok
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" valid; else in the error
	}{
		{"valid", ok, ""},
		{"no node", edit(func(c *Config) { c.NodeName = "" }), "--node-name"},
		{"outside the range", edit(func(c *Config) { c.ServiceIP = netip.MustParseAddr("10.128.0.10") }), "in --service-cluster-ip-range 10.96.0.0/12"},
		{"IPv6", edit(func(c *Config) { c.ServiceIP = netip.MustParseAddr("fd00::a") }), "want an IPv4 address"},
		{"port", edit(func(c *Config) { c.Port = 0 }), "--cluster-dns-port 0"},
		{"zone", edit(func(c *Config) { c.Zone = "" }), "--cluster-domain"},
	} {
		err := tc.cfg.Validate(cidr)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}
