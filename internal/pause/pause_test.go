package pause

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as the pause process (and as its
// short-lived child) when re-executed by the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("PAUSE_TEST_ROLE") {
	case "builtin":
		runBuiltinRole()
	case "pause":
		// Start a child that exits at once and is never waited for by Go:
		// only Run's reaping can collect it.
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
		if err != nil {
			fmt.Println("fork:", err)
			os.Exit(2)
		}
		fmt.Println(pid)
		os.Exit(Run())
	}
	os.Exit(m.Run())
}

func TestRunExitsZeroOnSignalAndReaps(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "PAUSE_TEST_ROLE=pause")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			child, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("child pid: %q", line)
			}
			// The child must be reaped (gone, not a zombie) while pause runs.
			deadline := time.Now().Add(5 * time.Second)
			for {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
				if err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("child %d not reaped: %s", child, b)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("pause exited with %v, want status 0", err)
			}
		})
	}
}
