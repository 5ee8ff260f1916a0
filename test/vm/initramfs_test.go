package vm

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseAdd(t *testing.T) {
	abs, err := filepath.Abs("bin/skiff")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		want Add
		err  string
	}{
		{in: "bin/skiff:/skiff/bin/skiff", want: Add{Host: abs, Guest: "/skiff/bin/skiff"}},
		{in: "bin/skiff", want: Add{Host: abs, Guest: abs}},
		{in: "/x/y:", want: Add{Host: "/x/y", Guest: "/x/y"}},
		{in: ":/guest", err: "empty host path"},
		{in: "a:relative", err: "must be absolute"},
	}
	for _, tt := range tests {
		got, err := ParseAdd(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseAdd(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseAdd(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestRunScript(t *testing.T) {
	tests := []struct {
		name string
		img  Image
		want string
		err  string
	}{
		{
			name: "quoting",
			img: Image{
				Command: []string{"/skiff/e2e.test", "-test.run", "TestA|TestB", "it's"},
				Env:     []string{"SKIFF_E2E=1", "X=a b=c"},
				Workdir: "/skiff/test/e2e",
			},
			want: "cd '/skiff/test/e2e' || exit 126\nexport SKIFF_E2E='1'\nexport X='a b=c'\n" +
				"exec '/skiff/e2e.test' '-test.run' 'TestA|TestB' 'it'\\''s'\n",
		},
		{name: "default workdir", img: Image{Command: []string{"true"}}, want: "cd '/' || exit 126\nexec 'true'\n"},
		{name: "relative workdir", img: Image{Command: []string{"true"}, Workdir: "x"}, err: "not absolute"},
		{name: "no equals sign", img: Image{Command: []string{"true"}, Env: []string{"FOO"}}, err: "want KEY=VALUE"},
		{name: "bad key", img: Image{Command: []string{"true"}, Env: []string{"A;rm=1"}}, err: "want KEY=VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runScript(tt.img)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			body := strings.SplitN(string(got), "\n", 3)[2]
			if body != tt.want {
				t.Errorf("script body:\n%s\nwant:\n%s", body, tt.want)
			}
			if !strings.HasPrefix(string(got), "#!/bin/sh\n") {
				t.Error("script lacks #!/bin/sh")
			}
			if out, err := exec.Command("sh", "-n", "-c", string(got)).CombinedOutput(); err != nil {
				t.Errorf("sh -n: %v: %s", err, out)
			}
		})
	}
}

// fakeKernel returns a kernel whose module directory holds fakeModules'
// index and module files.
func fakeKernel(t *testing.T) Kernel {
	t.Helper()
	m := fakeModules(t)
	files := map[string]string{}
	for mod := range m.deps {
		files[mod] = "ko:" + mod
	}
	writeFiles(t, m.Dir, files)
	return Kernel{Image: "/boot/vmlinuz-6.1.0-1-cloud-amd64", Version: "6.1.0-1-cloud-amd64", ModulesDir: m.Dir}
}

// archive returns the files of r by guest path (directories left out).
func archive(t *testing.T, r *Rootfs) map[string]cpioEntry {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteCPIO(&buf); err != nil {
		t.Fatal(err)
	}
	out := map[string]cpioEntry{}
	for _, e := range readCPIO(t, buf.Bytes()) {
		if e.mode&^modePerm != modeDir {
			out["/"+e.name] = e
		}
	}
	return out
}

func TestInitramfsFileList(t *testing.T) {
	img := Image{
		Kernel:     fakeKernel(t),
		Command:    []string{"/skiff/e2e.test", "-test.v"},
		Env:        []string{"SKIFF_E2E=1"},
		Modules:    []string{"br_netfilter", "overlay", "missing_mod"},
		ModuleDirs: []string{"kernel/net/netfilter"},
		Timeout:    90 * time.Second,
		Nonce:      "abc123",
	}
	var warnings []string
	img.Logf = func(f string, a ...any) { warnings = append(warnings, f) }
	r := NewRootfs()
	for _, step := range []func(*Rootfs, Image) error{
		func(r *Rootfs, img Image) error { return addEtc(t.Context(), r, img) },
		func(r *Rootfs, img Image) error { return addModules(t.Context(), r, img) },
		func(r *Rootfs, img Image) error { return addInit(t.Context(), r, img) },
	} {
		if err := step(r, img); err != nil {
			t.Fatal(err)
		}
	}
	files := archive(t, r)
	mods := "/usr/lib/modules/6.1.0-1-cloud-amd64/"
	for _, name := range []string{
		"/init", "/usr/sbin/vm-init", "/etc/vmrun/config", "/etc/vmrun/run.sh", "/etc/vmrun/modules",
		"/etc/hosts", "/etc/resolv.conf", "/etc/passwd", "/etc/group", "/etc/hostname", "/dev/console", "/dev/null",
		mods + "modules.dep", mods + "modules.alias", mods + "modules.builtin",
		mods + "kernel/net/bridge/br_netfilter.ko", mods + "kernel/net/bridge/bridge.ko",
		mods + "kernel/net/802/stp.ko", mods + "kernel/net/llc/llc.ko",
		mods + "kernel/net/netfilter/nf_nat.ko", mods + "kernel/net/netfilter/nft_chain_nat.ko",
	} {
		if _, ok := files[name]; !ok {
			t.Errorf("%s missing from the initramfs", name)
		}
	}
	if _, ok := files[mods+"kernel/drivers/net/veth.ko"]; ok {
		t.Error("veth.ko is in the initramfs although neither asked for nor a dependency")
	}
	if got, want := files["/etc/vmrun/modules"].data,
		"kernel/net/llc/llc.ko\nkernel/net/802/stp.ko\nkernel/net/bridge/bridge.ko\nkernel/net/bridge/br_netfilter.ko\n"; got != want {
		t.Errorf("boot load list:\n%s\nwant:\n%s", got, want)
	}
	if got, want := files["/etc/vmrun/config"].data,
		"VMRUN_NONCE='abc123'\nVMRUN_TIMEOUT=90\nVMRUN_HOSTNAME='skiff-vm'\n"; got != want {
		t.Errorf("config:\n%s\nwant:\n%s", got, want)
	}
	if got := files["/init"]; got.mode&0o111 == 0 || !strings.HasPrefix(got.data, "#!/bin/sh") {
		t.Errorf("/init is not an executable script: mode %o", got.mode)
	}
	if !strings.Contains(files["/etc/vmrun/run.sh"].data, "exec '/skiff/e2e.test' '-test.v'") {
		t.Errorf("run.sh does not run the command:\n%s", files["/etc/vmrun/run.sh"].data)
	}
	if len(warnings) != 1 {
		t.Errorf("warnings = %q, want one about missing_mod", warnings)
	}
}

func TestAddInitValidates(t *testing.T) {
	tests := []struct {
		name string
		img  Image
		want string
	}{
		{"nonce with a space", Image{Command: []string{"true"}, Nonce: "a b", Timeout: time.Minute}, "nonce"},
		{"empty nonce", Image{Command: []string{"true"}, Timeout: time.Minute}, "nonce"},
		{"sub-second timeout", Image{Command: []string{"true"}, Nonce: "n", Timeout: 500 * time.Millisecond}, "timeout"},
	}
	for _, tt := range tests {
		err := addInit(t.Context(), NewRootfs(), tt.img)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestBuildRootfs(t *testing.T) {
	if _, err := lookPath("busybox"); err != nil {
		t.Skip("busybox not installed (test/setup.sh installs busybox-static)")
	}
	if _, err := BuildRootfs(t.Context(), Image{}); err == nil {
		t.Error("no command: no error")
	}
	extra := filepath.Join(t.TempDir(), "data")
	writeFiles(t, extra, map[string]string{"a/b.txt": "hello"})
	img := Image{
		Kernel: fakeKernel(t), Command: []string{"sh", "-c", "true"}, NoRuntime: true,
		Modules: []string{}, ModuleDirs: []string{}, Timeout: time.Minute, Nonce: "n1",
		Adds: []Add{{Host: extra, Guest: "/data"}},
	}
	r, err := BuildRootfs(t.Context(), img)
	if err != nil {
		t.Fatal(err)
	}
	files := archive(t, r)
	if e := files["/usr/bin/busybox"]; e.mode&^modePerm != modeRegular {
		t.Errorf("/usr/bin/busybox is not a regular file (mode %o)", e.mode)
	}
	if e := files["/usr/bin/sh"]; e.mode&^modePerm != modeSymlink || e.data != "/usr/bin/busybox" {
		t.Errorf("/usr/bin/sh = %+v, want a link to /usr/bin/busybox", e)
	}
	if e := files["/data/a/b.txt"]; e.data != "hello" {
		t.Errorf("/data/a/b.txt = %q, want hello", e.data)
	}
	if _, ok := files["/usr/bin/containerd"]; ok {
		t.Error("NoRuntime image contains containerd")
	}
}
