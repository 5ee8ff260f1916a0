package vm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConsoleWatcherMarkers(t *testing.T) {
	const nonce = "n0nce"
	tests := []struct {
		name       string
		chunks     []string
		wantFound  bool
		wantRC     int
		wantReason string
		wantBoot   bool
		wantPanic  bool
	}{
		{
			name: "result split across writes, CRLF",
			chunks: []string{"noise\r\nSKIFF-VM-BOO", "TED n0nce uptime=6.5 cgroupfs=cgroup2fs controllers=\"cpu memory pids\"\r\n",
				"=== RUN TestX\n[   30.1] SKIFF-VM-RESULT n0n", "ce rc=7\r\n"},
			wantFound: true, wantRC: 7, wantBoot: true,
		},
		{
			name:      "kernel message inside the marker line",
			chunks:    []string{"SKIFF-VM-RESULT [  161.12] SKIFF-VM-RESULT n0nce rc=0\n"},
			wantFound: true, wantRC: 0,
		},
		{
			name:      "guest timeout",
			chunks:    []string{"SKIFF-VM-RESULT n0nce rc=124 reason=timeout\n"},
			wantFound: true, wantRC: 124, wantReason: "timeout",
		},
		{
			name:   "other nonce is command output, not a result",
			chunks: []string{"SKIFF-VM-BOOTED fake uptime=1\nSKIFF-VM-RESULT fake rc=0\n"},
		},
		{
			name:      "first result wins (echo to tty and kmsg)",
			chunks:    []string{"SKIFF-VM-RESULT n0nce rc=1\n[ 9.0] SKIFF-VM-RESULT n0nce rc=0\n"},
			wantFound: true, wantRC: 1,
		},
		{
			name:   "malformed result",
			chunks: []string{"SKIFF-VM-RESULT n0nce rc=x\n"},
		},
		{
			name:      "last line without newline",
			chunks:    []string{"SKIFF-VM-RESULT n0nce rc=3"},
			wantFound: true, wantRC: 3,
		},
		{
			name:      "kernel panic",
			chunks:    []string{"[ 2.8] Kernel panic - not syncing: No working init found.\n"},
			wantPanic: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &consoleWatcher{nonce: nonce, start: time.Now(), result: make(chan struct{})}
			for _, c := range tt.chunks {
				if n, err := w.Write([]byte(c)); err != nil || n != len(c) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			res := w.finish(time.Second)
			if res.Found != tt.wantFound || res.RC != tt.wantRC || res.Reason != tt.wantReason {
				t.Errorf("result = found %v rc %d reason %q, want %v %d %q", res.Found, res.RC, res.Reason, tt.wantFound, tt.wantRC, tt.wantReason)
			}
			select {
			case <-w.result:
				if !tt.wantFound {
					t.Error("result channel closed without a result")
				}
			default:
				if tt.wantFound {
					t.Error("result channel not closed")
				}
			}
			if got := res.BootLine != ""; got != tt.wantBoot {
				t.Errorf("boot line %q, want one: %v", res.BootLine, tt.wantBoot)
			}
			if tt.wantBoot && (res.Boot.CgroupFS != "cgroup2fs" || res.Boot.Uptime != 6.5) {
				t.Errorf("boot info = %+v", res.Boot)
			}
			if got := res.Panic != ""; got != tt.wantPanic {
				t.Errorf("panic line %q, want one: %v", res.Panic, tt.wantPanic)
			}
			if res.Total != time.Second {
				t.Errorf("total = %s", res.Total)
			}
		})
	}
}

func TestConsoleWatcherTail(t *testing.T) {
	w := &consoleWatcher{nonce: "n", result: make(chan struct{})}
	for i := range 100 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	// An endless line is cut rather than buffered without bound.
	if _, err := w.Write([]byte(strings.Repeat("x", 70<<10))); err != nil {
		t.Fatal(err)
	}
	res := w.finish(0)
	if len(res.Tail) != tailLines {
		t.Fatalf("tail has %d lines, want %d", len(res.Tail), tailLines)
	}
	if res.Tail[0] != "line 61" || len(res.Tail[tailLines-1]) != 70<<10 {
		t.Errorf("tail = %q ... (last %d bytes)", res.Tail[0], len(res.Tail[tailLines-1]))
	}
}

func TestParseBootFields(t *testing.T) {
	b, err := ParseBootFields(`uptime=8.25 cgroupfs=cgroup2fs controllers="cpuset cpu io memory pids" extra=1`)
	if err != nil {
		t.Fatal(err)
	}
	if b.Uptime != 8.25 || b.CgroupFS != "cgroup2fs" || strings.Join(b.Controllers, ",") != "cpuset,cpu,io,memory,pids" {
		t.Errorf("boot info = %+v", b)
	}
	if _, err := ParseBootFields("uptime=soon"); err == nil {
		t.Error("bad uptime: no error")
	}
	if b, _ := ParseBootFields(`controllers=""`); len(b.Controllers) != 0 {
		t.Errorf("empty controllers = %q", b.Controllers)
	}
}

func TestRequireCgroup2(t *testing.T) {
	v2 := BootInfo{CgroupFS: "cgroup2fs", Controllers: []string{"cpu", "memory", "pids", "io"}}
	tests := []struct {
		name string
		b    BootInfo
		want []string
		err  string
	}{
		{name: "all there", b: v2, want: []string{"cpu", " memory", "pids", ""}},
		{name: "controller missing", b: v2, want: []string{"cpu", "hugetlb"}, err: "lacks hugetlb"},
		{name: "v1 host", b: BootInfo{CgroupFS: "tmpfs", Controllers: v2.Controllers}, want: []string{"cpu"}, err: "want cgroup2fs"},
		{name: "no boot line", want: []string{"cpu"}, err: "want cgroup2fs"},
	}
	for _, tt := range tests {
		err := tt.b.RequireCgroup2(tt.want)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: error = %v, want %q", tt.name, err, tt.err)
		}
	}
}

// fakeQEMU writes a shell script standing in for qemu-system-x86_64 that
// records its arguments in args.txt and then runs body.
func fakeQEMU(t *testing.T, body string) (bin, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	bin, argsFile = filepath.Join(dir, "qemu"), filepath.Join(dir, "args.txt")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" >%s\n%s\n", argsFile, body)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, argsFile
}

func TestMachineRun(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		timeout time.Duration
		wantRC  int
		err     string
	}{
		{
			name: "result reported",
			body: `echo "SKIFF-VM-BOOTED n1 uptime=1 cgroupfs=cgroup2fs controllers=\"cpu\""; echo PASS; echo "SKIFF-VM-RESULT n1 rc=5"`,
			// Far beyond what the run needs: it ends on its own.
			timeout: time.Minute, wantRC: 5,
		},
		{
			name:    "kernel panic",
			body:    `echo "boot"; echo "Kernel panic - not syncing: VFS: Unable to mount root fs"`,
			timeout: time.Minute, err: "guest kernel panic",
		},
		{
			name:    "qemu fails",
			body:    `echo "could not load kernel" >&2; exit 1`,
			timeout: time.Minute, err: "could not load kernel",
		},
		{
			name:    "hung guest",
			body:    `echo "booting"; exec sleep 60`,
			timeout: 300 * time.Millisecond, err: "timed out after 300ms",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin, argsFile := fakeQEMU(t, tt.body)
			log := filepath.Join(t.TempDir(), "console.log")
			m := Machine{QEMU: bin, Kernel: "/k", Initrd: "/i", Nonce: "n1", Timeout: tt.timeout, Log: log, Append: []string{"foo=bar"}}
			res, err := m.Run(t.Context())
			if tt.err != "" {
				if !errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want ErrNoResult with %q", err, tt.err)
				}
				if data, _ := os.ReadFile(log); len(data) > 0 && !strings.Contains(err.Error(), strings.TrimSpace(string(data))) {
					t.Errorf("error lacks the console tail %q: %v", data, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !res.Found || res.RC != tt.wantRC || res.Booted <= 0 || res.Boot.CgroupFS != "cgroup2fs" {
				t.Errorf("result = %+v", res)
			}
			data, err := os.ReadFile(log)
			if err != nil || !strings.Contains(string(data), "PASS\n") {
				t.Errorf("console log = %q, %v", data, err)
			}
			args, _ := os.ReadFile(argsFile)
			for _, want := range []string{"-accel\ntcg\n", "-smp\n2\n", "-m\n3072\n", "-kernel\n/k\n", "-initrd\n/i\n", "-no-reboot\n",
				"console=ttyS0 quiet panic=-1 cgroup_no_v1=all mitigations=off printk.devkmsg=on rdinit=/init tsc=reliable foo=bar\n"} {
				if !strings.Contains(string(args), want) {
					t.Errorf("qemu arguments lack %q:\n%s", want, args)
				}
			}
		})
	}
}

// TestMachineArgsUserNet: UserNet adds a virtio NIC on qemu's user-mode
// network; without it the guest has no NIC (-nodefaults).
func TestMachineArgsUserNet(t *testing.T) {
	m := Machine{Kernel: "k", Accel: "tcg", CPU: "max", MemoryMiB: 1, CPUs: 1}
	if got := strings.Join(m.args(), " "); strings.Contains(got, "-netdev") || !strings.Contains(got, "-nodefaults") {
		t.Errorf("without UserNet: %s", got)
	}
	m.UserNet = true
	if got := strings.Join(m.args(), " "); !strings.Contains(got, "-netdev user,id=net0 -device virtio-net-pci,netdev=net0") {
		t.Errorf("with UserNet: %s", got)
	}
}
