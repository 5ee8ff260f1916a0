package pause

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The built-in executables are well-formed static ELF files whose entry
// point lies in their one loadable segment, for both architectures (the
// arm64 one cannot run here: no qemu-user, so its code is checked word by
// word against a disassembly instead, below).
func TestExecutableIsStaticELF(t *testing.T) {
	for _, tt := range []struct {
		goarch  string
		machine elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		t.Run(tt.goarch, func(t *testing.T) {
			b, ok := Executable(tt.goarch)
			if !ok {
				t.Fatal("no built-in executable")
			}
			if again, _ := Executable(tt.goarch); !bytes.Equal(again, b) {
				t.Fatal("Executable is not deterministic")
			}
			f, err := elf.NewFile(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || f.Type != elf.ET_EXEC || f.Machine != tt.machine {
				t.Fatalf("header: class %v data %v type %v machine %v", f.Class, f.Data, f.Type, f.Machine)
			}
			var loads int
			for _, p := range f.Progs {
				switch p.Type {
				case elf.PT_INTERP, elf.PT_DYNAMIC:
					t.Fatalf("%v segment: not static", p.Type)
				case elf.PT_LOAD:
					loads++
					if p.Off != 0 || p.Filesz != uint64(len(b)) || p.Memsz != p.Filesz || p.Flags != elf.PF_R|elf.PF_X {
						t.Errorf("load segment %+v does not map the %d-byte file read+exec", p.ProgHeader, len(b))
					}
					if p.Vaddr%p.Align != p.Off%p.Align || p.Align%0x10000 != 0 {
						t.Errorf("load segment not aligned for 64 KiB pages: %+v", p.ProgHeader)
					}
					if f.Entry < p.Vaddr+codeStart || f.Entry >= p.Vaddr+p.Filesz {
						t.Errorf("entry %#x outside the code of segment %+v", f.Entry, p.ProgHeader)
					}
				}
			}
			if loads != 1 {
				t.Fatalf("%d load segments, want 1", loads)
			}
			// The file ends with the two sigsets the code points at.
			tail := b[len(b)-16:]
			if all, wait := binary.LittleEndian.Uint64(tail), binary.LittleEndian.Uint64(tail[8:]); all != ^uint64(0) || wait != 1<<1|1<<14|1<<16 {
				t.Errorf("sigsets %#x %#x, want all and {INT, TERM, CHLD}", all, wait)
			}
		})
	}
	if _, ok := Executable("riscv64"); ok {
		t.Error("riscv64: built-in executable returned")
	}
}

// arm64Golden is the arm64 code as aarch64-linux-gnu-objdump 2.40
// disassembled it (-D -b binary -m aarch64 --start-address=176); a change of
// the code must be checked the same way and the list updated.
var arm64Golden = []struct {
	word uint32
	asm  string
}{
	{0xd2800000, "mov x0, #0x0"},
	{0x100003a1, "adr x1, allset"},
	{0xd2800002, "mov x2, #0x0"},
	{0xd2800103, "mov x3, #0x8"},
	{0xd28010e8, "mov x8, #0x87 (rt_sigprocmask)"},
	{0xd4000001, "svc #0x0"},
	{0x92800000, "mov x0, #-1"}, // reap:
	{0xd2800001, "mov x1, #0x0"},
	{0xd2800022, "mov x2, #0x1"},
	{0xd2800003, "mov x3, #0x0"},
	{0xd2802088, "mov x8, #0x104 (wait4)"},
	{0xd4000001, "svc #0x0"},
	{0xf100001f, "cmp x0, #0x0"},
	{0x54ffff2c, "b.gt reap"},
	{0x10000240, "adr x0, waitset"}, // wait:
	{0xd2800001, "mov x1, #0x0"},
	{0xd2800002, "mov x2, #0x0"},
	{0xd2800103, "mov x3, #0x8"},
	{0xd2801128, "mov x8, #0x89 (rt_sigtimedwait)"},
	{0xd4000001, "svc #0x0"},
	{0xf100441f, "cmp x0, #0x11"},
	{0x54fffe20, "b.eq reap"},
	{0xf100081f, "cmp x0, #0x2"},
	{0x54000080, "b.eq exit"},
	{0xf1003c1f, "cmp x0, #0xf"},
	{0x54000040, "b.eq exit"},
	{0x17fffff4, "b wait"},
	{0xd2800000, "mov x0, #0x0"}, // exit:
	{0xd2800bc8, "mov x8, #0x5e (exit_group)"},
	{0xd4000001, "svc #0x0"},
}

func TestArm64CodeMatchesDisassembly(t *testing.T) {
	b, _ := Executable("arm64")
	code := b[codeStart:]
	if want := len(arm64Golden)*4 + 16; len(code) != want {
		t.Fatalf("code is %d bytes, want %d", len(code), want)
	}
	for i, g := range arm64Golden {
		if got := binary.LittleEndian.Uint32(code[4*i:]); got != g.word {
			t.Errorf("instruction %d (%s): %#08x, want %#08x", i, g.asm, got, g.word)
		}
	}
}

// startBuiltin writes the built-in executable of this machine to a file and
// starts it through the test binary (role "builtin", see TestMain), which
// first forks children: /bin/true (exits before the pause code runs) and
// sleep 0.3 (exits while it runs, a SIGCHLD). It returns the command and
// the children's PIDs. Skips on architectures without a built-in.
func startBuiltin(t *testing.T) (*exec.Cmd, []int) {
	t.Helper()
	b, ok := Executable(goruntime.GOARCH)
	if !ok {
		t.Skipf("no built-in pause for %s", goruntime.GOARCH)
	}
	path := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PAUSE_TEST_ROLE=builtin", "PAUSE_TEST_EXE="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var line [64]byte
	n, err := out.Read(line[:])
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(line[:n])) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("children: %q", line[:n])
		}
		pids = append(pids, pid)
	}
	if len(pids) != 2 {
		t.Fatalf("children: %q", line[:n])
	}
	return cmd, pids
}

// runBuiltinRole is the "builtin" role: fork the children, print their
// PIDs, then become the built-in pause executable (same PID, so the
// children stay its children).
func runBuiltinRole() {
	var pids []string
	for _, argv := range [][]string{{"/bin/true"}, {"/bin/sleep", "0.3"}} {
		pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{})
		if err != nil {
			fmt.Println("fork:", err)
			os.Exit(2)
		}
		pids = append(pids, strconv.Itoa(pid))
	}
	fmt.Println(strings.Join(pids, " "))
	exe := os.Getenv("PAUSE_TEST_EXE")
	err := syscall.Exec(exe, []string{"/pause"}, nil)
	fmt.Println("exec:", err)
	os.Exit(2)
}

// procState returns the state letter of pid ("S", "Z"...) or "" if gone.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}

// The built-in pause stays up, ignores other signals, reaps the children it
// has (exited before it ran and while it ran) and exits 0 promptly on
// SIGTERM and on SIGINT, like Run.
func TestBuiltinRunsReapsAndExitsZero(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, children := startBuiltin(t)
			deadline := time.Now().Add(5 * time.Second)
			for _, c := range children {
				for procState(c) != "" {
					if time.Now().After(deadline) {
						t.Fatalf("child %d not reaped (state %s)", c, procState(c))
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			if st := procState(cmd.Process.Pid); st != "S" {
				t.Fatalf("pause state %q after SIGHUP, want S (sleeping)", st)
			}
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid)); strings.TrimSpace(string(b)) != "pause" {
				t.Fatalf("process is %q, not the built-in pause", b)
			}
			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("pause exited with %v, want status 0", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("pause still running 5 s after %v", sig)
			}
			t.Logf("exited %v after %v", sig, time.Since(start))
		})
	}
}
