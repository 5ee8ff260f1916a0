package network

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
)

func TestBridgeConflist(t *testing.T) {
	tests := []struct {
		name    string
		cfg     BridgeConfig
		wantErr string
		check   func(t *testing.T, bridge map[string]any, list *libcni.NetworkConfigList)
	}{
		{
			name: "defaults",
			check: func(t *testing.T, bridge map[string]any, list *libcni.NetworkConfigList) {
				if list.Name != "skiff" || list.CNIVersion != "1.0.0" {
					t.Errorf("name/version = %s/%s", list.Name, list.CNIVersion)
				}
				if bridge["bridge"] != "skiff0" || bridge["isGateway"] != true || bridge["ipMasq"] != false || bridge["hairpinMode"] != true {
					t.Errorf("bridge plugin = %v", bridge)
				}
				if _, ok := bridge["mtu"]; ok {
					t.Errorf("mtu set without MTU: %v", bridge)
				}
				ipam := bridge["ipam"].(map[string]any)
				if got := ipam["ranges"].([]any)[0].([]any)[0].(map[string]any)["subnet"]; got != "10.88.0.0/16" {
					t.Errorf("subnet = %v", got)
				}
				if got := ipam["routes"].([]any)[0].(map[string]any)["dst"]; got != "0.0.0.0/0" {
					t.Errorf("route = %v", got)
				}
				if len(list.Plugins) != 2 || list.Plugins[1].Network.Type != "portmap" ||
					!list.Plugins[1].Network.Capabilities["portMappings"] {
					t.Errorf("portmap plugin missing or without portMappings capability")
				}
			},
		},
		{
			name: "custom",
			cfg:  BridgeConfig{Name: "n", Bridge: "br9", PodCIDR: "10.1.2.3/24", IPMasq: true, MTU: 1400, IPAMDataDir: "/x/ipam"},
			check: func(t *testing.T, bridge map[string]any, list *libcni.NetworkConfigList) {
				ipam := bridge["ipam"].(map[string]any)
				if list.Name != "n" || bridge["bridge"] != "br9" || bridge["ipMasq"] != true || bridge["mtu"] != 1400.0 || ipam["dataDir"] != "/x/ipam" {
					t.Errorf("conflist = %v", bridge)
				}
				// The subnet is normalized to its network address.
				if got := ipam["ranges"].([]any)[0].([]any)[0].(map[string]any)["subnet"]; got != "10.1.2.0/24" {
					t.Errorf("subnet = %v", got)
				}
			},
		},
		{
			name: "ipv6",
			cfg:  BridgeConfig{PodCIDR: "fd00:10::/64"},
			check: func(t *testing.T, bridge map[string]any, _ *libcni.NetworkConfigList) {
				ipam := bridge["ipam"].(map[string]any)
				if got := ipam["routes"].([]any)[0].(map[string]any)["dst"]; got != "::/0" {
					t.Errorf("route = %v", got)
				}
			},
		},
		{name: "bad cidr", cfg: BridgeConfig{PodCIDR: "10.0.0.0"}, wantErr: "pod CIDR"},
		{name: "long bridge", cfg: BridgeConfig{Bridge: "a-very-long-bridge"}, wantErr: "longer than 15"},
		{name: "negative mtu", cfg: BridgeConfig{MTU: -1}, wantErr: "MTU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := BridgeConflist(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			list, err := libcni.ConfListFromBytes(b)
			if err != nil {
				t.Fatal(err)
			}
			var bridge map[string]any
			if err := json.Unmarshal(list.Plugins[0].Bytes, &bridge); err != nil {
				t.Fatal(err)
			}
			tt.check(t, bridge, list)
		})
	}
}

func TestWriteBridgeConflistIdempotent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net.d")
	path, err := WriteBridgeConflist(dir, BridgeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, ConflistName) {
		t.Fatalf("path = %s", path)
	}
	old := time.Unix(1000, 0)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteBridgeConflist(dir, BridgeConfig{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || !fi.ModTime().Equal(old) {
		t.Fatalf("identical config rewritten: %v %v", fi.ModTime(), err)
	}
	if _, err := WriteBridgeConflist(dir, BridgeConfig{PodCIDR: "10.7.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "10.7.0.0/16") {
		t.Fatalf("config not replaced:\n%s", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dir has leftovers: %v", entries)
	}
	// libcni finds exactly our network in the directory.
	list, err := libcni.LoadConfList(dir, "skiff")
	if err != nil || list.Name != "skiff" {
		t.Fatalf("LoadConfList = %v, %v", list, err)
	}
}
