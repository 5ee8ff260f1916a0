package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles creates files (content by relative path) below dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFindKernel(t *testing.T) {
	host, private, empty := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, host, map[string]string{
		"boot/vmlinuz-6.1.0-9-cloud-amd64":              "",
		"lib/modules/6.1.0-9-cloud-amd64/modules.dep":   "",
		"boot/vmlinuz-6.1.0-28-amd64":                   "", // not a cloud kernel
		"lib/modules/6.1.0-28-amd64/modules.dep":        "",
		"boot/vmlinuz-6.1.0-7-cloud-amd64":              "", // no modules index
		"boot/config-6.1.0-9-cloud-amd64":               "",
		"lib/modules/6.1.0-7-cloud-amd64/modules.order": "",
	})
	writeFiles(t, private, map[string]string{
		"boot/vmlinuz-6.1.0-10-cloud-amd64":            "",
		"lib/modules/6.1.0-10-cloud-amd64/modules.dep": "",
	})
	tests := []struct {
		name        string
		image       string
		roots       []string
		wantVersion string
		wantModules string
		err         string
	}{
		{
			name: "newest across roots, numerically", roots: []string{host, private},
			wantVersion: "6.1.0-10-cloud-amd64", wantModules: filepath.Join(private, "lib/modules/6.1.0-10-cloud-amd64"),
		},
		{
			name: "host root only", roots: []string{host, empty},
			wantVersion: "6.1.0-9-cloud-amd64", wantModules: filepath.Join(host, "lib/modules/6.1.0-9-cloud-amd64"),
		},
		{
			name: "explicit image, modules beside it", image: filepath.Join(host, "boot/vmlinuz-6.1.0-28-amd64"),
			wantVersion: "6.1.0-28-amd64", wantModules: filepath.Join(host, "lib/modules/6.1.0-28-amd64"),
		},
		{name: "nothing found", roots: []string{empty}, err: "install linux-image-cloud-amd64"},
		{name: "no modules index", image: filepath.Join(host, "boot/vmlinuz-6.1.0-7-cloud-amd64"), err: "modules of kernel 6.1.0-7-cloud-amd64"},
		{name: "image missing", image: filepath.Join(empty, "boot/vmlinuz-1"), err: "kernel image"},
		{name: "badly named image", image: filepath.Join(host, "boot/config-6.1.0-9-cloud-amd64"), err: "not vmlinuz-<version>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := FindKernel(tt.image, tt.roots)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if k.Version != tt.wantVersion || k.ModulesDir != tt.wantModules {
				t.Errorf("kernel = %+v, want version %s modules %s", k, tt.wantVersion, tt.wantModules)
			}
		})
	}
}

func TestVersionLess(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"6.1.0-9", "6.1.0-10", true},
		{"6.1.0-10", "6.1.0-9", false},
		{"6.1.0-10", "6.1.0-10", false},
		{"5.19.0-1", "6.1.0-1", true},
		{"6.1.0-10-cloud", "6.1.0-10-cloud-amd64", true},
		{"6.1.0-10-amd64", "6.1.0-10-cloud", true},
		{"6.1.0-010", "6.1.0-9", false},
	}
	for _, tt := range tests {
		if got := versionLess(tt.a, tt.b); got != tt.want {
			t.Errorf("versionLess(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// fakeModules writes a small module index: br_netfilter needs bridge,
// which needs stp and llc; veth stands alone; overlay is built in.
func fakeModules(t *testing.T) *Modules {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"modules.dep": "kernel/net/bridge/br_netfilter.ko: kernel/net/bridge/bridge.ko kernel/net/802/stp.ko kernel/net/llc/llc.ko\n" +
			"kernel/net/bridge/bridge.ko: kernel/net/802/stp.ko kernel/net/llc/llc.ko\n" +
			"kernel/net/802/stp.ko: kernel/net/llc/llc.ko\n" +
			"kernel/net/llc/llc.ko:\n" +
			"kernel/drivers/net/veth.ko:\n" +
			"kernel/net/netfilter/nft_chain_nat.ko: kernel/net/netfilter/nf_nat.ko\n" +
			"kernel/net/netfilter/nf_nat.ko:\n",
		"modules.builtin": "kernel/fs/overlayfs/overlay.ko\n",
		"modules.alias": "alias nft-chain-2-nat nft_chain_nat\nalias rtnl-link-veth veth\n" +
			"alias net-pf-7 bridge\nalias fs-xfs xfs\n",
	})
	m, err := LoadModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModulesResolve(t *testing.T) {
	m := fakeModules(t)
	load, builtin, missing := m.Resolve([]string{"br-netfilter", "veth", "overlay", "bridge", "nosuch"})
	wantLoad := "kernel/net/llc/llc.ko kernel/net/802/stp.ko kernel/net/bridge/bridge.ko kernel/net/bridge/br_netfilter.ko kernel/drivers/net/veth.ko"
	if got := strings.Join(load, " "); got != wantLoad {
		t.Errorf("load = %s\nwant   %s", got, wantLoad)
	}
	if strings.Join(builtin, " ") != "overlay" || strings.Join(missing, " ") != "nosuch" {
		t.Errorf("builtin = %q, missing = %q; want [overlay], [nosuch]", builtin, missing)
	}
}

func TestModulesIndexFiles(t *testing.T) {
	m := fakeModules(t)
	all := m.Closure(append(m.UnderDirs([]string{"kernel/net/netfilter/"}), "kernel/drivers/net/veth.ko"))
	want := "kernel/drivers/net/veth.ko kernel/net/netfilter/nf_nat.ko kernel/net/netfilter/nft_chain_nat.ko"
	if got := strings.Join(all, " "); got != want {
		t.Fatalf("closure = %s, want %s", got, want)
	}
	wantDep := "kernel/drivers/net/veth.ko:\nkernel/net/netfilter/nf_nat.ko:\n" +
		"kernel/net/netfilter/nft_chain_nat.ko: kernel/net/netfilter/nf_nat.ko\n"
	if got := string(m.depFile(all)); got != wantDep {
		t.Errorf("modules.dep =\n%s\nwant\n%s", got, wantDep)
	}
	alias, err := m.aliasFile(all)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(alias), "alias nft-chain-2-nat nft_chain_nat\nalias rtnl-link-veth veth\n"; got != want {
		t.Errorf("modules.alias =\n%s\nwant\n%s", got, want)
	}
}

func TestLoadModulesErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadModules(dir); err == nil {
		t.Error("no modules.dep: no error")
	}
	writeFiles(t, dir, map[string]string{"modules.dep": "no colon here\n", "modules.builtin": ""})
	if _, err := LoadModules(dir); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("malformed modules.dep: error = %v", err)
	}
}
