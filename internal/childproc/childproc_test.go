package childproc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The main goroutine keeps the main thread, which the runtime never ends
// (a goroutine that exits locked to it wedges it instead): the test's
// goroutines run on threads that do end.
func init() { runtime.LockOSThread() }

// TestPdeathsigSurvivesLockedGoroutines: goroutines that lock their thread
// and exit (ending that thread) while a child with a parent-death signal
// runs do not stop it; the child's exit is reported.
func TestPdeathsigSurvivesLockedGoroutines(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var p *Proc
	var err error
	var wg sync.WaitGroup
	// The caller's thread ends right after Start: the child must not have
	// been forked from it.
	wg.Go(func() {
		runtime.LockOSThread()
		p, err = Start(cmd)
	})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() { runtime.LockOSThread() }) // exits locked: its thread ends
	}
	wg.Wait()
	select {
	case <-p.Done():
		t.Fatalf("the child died with another goroutine's thread: %v", p.Err())
	case <-time.After(200 * time.Millisecond):
	}
	_ = cmd.Process.Kill()
	<-p.Done()
	if p.Err() == nil {
		t.Error("killed child: no exit error")
	}
	if _, err := Start(exec.Command("/nonexistent/binary")); err == nil {
		t.Error("a binary that does not exist: no error")
	}
}
