package e2e

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A skiff built by a plain `go build` (what `go install` does: cgo on where
// gcc is, so the executable is dynamically linked) and installed alone,
// without skiff-pause beside it, runs pods (issue 12 item 5). Skips where
// the go command is missing (the VM suite runs the test binary alone).
func TestPlainGoBuildAgentRunsPods(t *testing.T) {
	e := NewEnv(t)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	bin := filepath.Join(t.TempDir(), "skiff")
	build := exec.Command(goCmd, "build", "-o", bin, "./cmd/skiff")
	build.Dir = "../.."
	build.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CGO_ENABLED=") })
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if !dynamicallyLinked(t, bin) {
		t.Skip("go build gave a static executable (no C compiler?); the case under test needs a dynamic one")
	}
	e.StartAgent(t, AgentOptions{Bin: bin})
	e.WriteManifest(t, "plain.yaml", twoContainerPod("plain"))
	e.WaitForPod(t, PodName("plain"), runningAndReady, podStartTimeout)
	if log := e.AgentLog(t); !strings.Contains(log, `pauseFrom="built-in`) {
		t.Error("the agent did not build its pause image from the built-in pause")
	}
}

// dynamicallyLinked reports whether the ELF executable at path asks for a
// program interpreter (the dynamic loader).
func dynamicallyLinked(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}
