package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// asMainEnv makes the test binary behave as the testserver command, so the
// process-level tests exercise the real signal and exit handling.
const asMainEnv = "TESTSERVER_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// proc is a testserver child process whose stdout is read line by line.
type proc struct {
	cmd   *exec.Cmd
	lines chan string
}

func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"--http-port=0", "--tcp-port=0", "--grpc-port=0"}, args...)
	cmd := exec.Command(self, all...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, lines: make(chan string, 100)}
	go p.read(stdout)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

func (p *proc) read(r io.Reader) {
	defer close(p.lines)
	s := bufio.NewScanner(r)
	for s.Scan() {
		p.lines <- s.Text()
	}
}

// waitLine waits for a stdout line containing want.
func (p *proc) waitLine(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("stdout closed before a line containing %q", want)
			}
			if strings.Contains(line, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no stdout line containing %q", want)
		}
	}
}

// exitCode waits for the process and returns its exit code (-1: signaled).
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		t.Fatalf("wait: %v", err)
		return 0
	}
}

func TestExitAfterWritesTerminationMessage(t *testing.T) {
	msgPath := filepath.Join(t.TempDir(), "termination-log")
	p := startProc(t, "--exit-code=3", "--exit-after=50ms",
		"--termination-message=goodbye", "--termination-message-path="+msgPath)
	p.waitLine(t, "testserver: started")
	if code := p.exitCode(t); code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
	b, err := os.ReadFile(msgPath)
	if err != nil || string(b) != "goodbye" {
		t.Fatalf("termination message %q (%v), want goodbye", b, err)
	}
}

func TestSIGTERMExitsWithLine(t *testing.T) {
	p := startProc(t, "--sigterm-exit-code=143")
	p.waitLine(t, "testserver: started")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLine(t, "received SIGTERM, exiting")
	if code := p.exitCode(t); code != 143 {
		t.Fatalf("exit code %d, want 143", code)
	}
}

func TestIgnoreSIGTERMOnlySIGKILLStops(t *testing.T) {
	p := startProc(t, "--ignore-sigterm")
	p.waitLine(t, "testserver: started")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLine(t, "received SIGTERM, ignoring it")
	// The process printed that it ignores SIGTERM; it must still be alive,
	// which signal 0 checks without side effects.
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("process gone after SIGTERM with --ignore-sigterm: %v", err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != -1 {
		t.Fatalf("exit code %d, want -1 (killed by signal)", code)
	}
}

func TestLogEveryPrintsTicks(t *testing.T) {
	p := startProc(t, "--log-every=20ms")
	p.waitLine(t, "testserver: tick 1 ")
	p.waitLine(t, "testserver: tick 2 ")
}
