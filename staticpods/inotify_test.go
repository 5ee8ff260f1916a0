package staticpods

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nextEvent waits for an event of w whose mask has any bit of want.
func nextEvent(t *testing.T, w *dirWatcher, want uint32) dirEvent {
	t.Helper()
	timeout := time.After(failAfter)
	for {
		select {
		case ev := <-w.Events:
			if ev.Mask&want != 0 {
				return ev
			}
		case err := <-w.Errors:
			t.Fatalf("watcher error: %v", err)
		case <-timeout:
			t.Fatalf("no event with mask %#x within %v", want, failAfter)
		}
	}
}

// The watcher reports what the source needs to know: a file created and
// closed, renamed away and in, deleted, and the directory going.
func TestDirWatcher(t *testing.T) {
	dir := t.TempDir()
	w, err := newDirWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	steps := []struct {
		do      func() error
		mask    uint32
		name    string
		settled bool
	}{
		{func() error { return os.WriteFile(a, []byte("x"), 0o644) }, unix.IN_CREATE, a, false},
		{nil, unix.IN_CLOSE_WRITE, a, true},
		{func() error { return os.Rename(a, b) }, unix.IN_MOVED_FROM, a, true},
		{nil, unix.IN_MOVED_TO, b, true},
		{func() error { return os.Remove(b) }, unix.IN_DELETE, b, true},
		{func() error { return os.Remove(dir) }, unix.IN_DELETE_SELF, dir, false},
	}
	for _, s := range steps {
		if s.do != nil {
			if err := s.do(); err != nil {
				t.Fatal(err)
			}
		}
		ev := nextEvent(t, w, s.mask)
		if ev.Name != s.name {
			t.Errorf("event %#x for %q, want %q", s.mask, ev.Name, s.name)
		}
		if s.name == dir {
			if !dirGone(ev) {
				t.Errorf("dirGone(%#x) = false for the directory's removal", ev.Mask)
			}
			continue
		}
		if got := fileSettling(ev) != unsettled; got != s.settled {
			t.Errorf("settled(%q, %#x) = %v, want %v", ev.Name, ev.Mask, got, s.settled)
		}
	}
}

// Close returns even when nobody reads the events any more (the source's
// loop has returned on its context).
func TestDirWatcherCloseWithUnreadEvents(t *testing.T) {
	dir := t.TempDir()
	w, err := newDirWatcher()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	for i := range 100 { // more than the Events buffer
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the reader has filled the buffer: it is then blocked.
	for deadline := time.Now().Add(failAfter); len(w.Events) < cap(w.Events); {
		if time.Now().After(deadline) {
			t.Fatalf("only %d events buffered", len(w.Events))
		}
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(failAfter):
		t.Fatal("Close blocked on unread events")
	}
}
