package staticpods

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirWatcher is an inotify watch of one directory. It exists instead of
// fsnotify because it must tell a file that is complete from one that is
// still being written: fsnotify reports a rename into the directory and a
// new empty file alike (Create) and hides IN_CLOSE_WRITE, so every read had
// to wait out the full debounce (see settled).
//
// Events and Errors are closed when Close returns. Add and Remove are safe
// for concurrent use with the reader; Close must be called once.
type dirWatcher struct {
	fd     int
	f      *os.File // fd, read through the runtime poller so Close unblocks it
	Events chan dirEvent
	Errors chan error
	done   chan struct{}
	stop   chan struct{} // closed by Close: the reader stops sending

	mu  sync.Mutex
	wd  int
	dir string
}

// dirEvent is one inotify event: Name is the file's path, or the watched
// directory itself for events about it.
type dirEvent struct {
	Name string
	Mask uint32
}

// watchMask is what dirWatcher asks inotify for.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// newDirWatcher starts an inotify instance and its reader goroutine.
func newDirWatcher() (*dirWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	w := &dirWatcher{
		fd: fd, f: os.NewFile(uintptr(fd), "inotify"), wd: -1,
		Events: make(chan dirEvent, 64), Errors: make(chan error, 1),
		done: make(chan struct{}), stop: make(chan struct{}),
	}
	go w.read()
	return w, nil
}

// Add watches dir, replacing any previous watch of this watcher.
func (w *dirWatcher) Add(dir string) error {
	wd, err := unix.InotifyAddWatch(w.fd, dir, watchMask)
	if err != nil {
		return fmt.Errorf("inotify_add_watch %s: %w", dir, err)
	}
	w.mu.Lock()
	w.wd, w.dir = wd, filepath.Clean(dir)
	w.mu.Unlock()
	return nil
}

// Remove drops the watch; an error if there is none (the directory went).
func (w *dirWatcher) Remove() error {
	w.mu.Lock()
	wd := w.wd
	w.wd = -1
	w.mu.Unlock()
	if wd < 0 {
		return errors.New("not watching")
	}
	_, err := unix.InotifyRmWatch(w.fd, uint32(wd))
	return err
}

// Close stops the reader and closes the inotify instance. Blocking until
// the reader has returned; events not yet received are dropped.
func (w *dirWatcher) Close() error {
	close(w.stop)
	err := w.f.Close()
	<-w.done
	return err
}

// read turns inotify records into Events until the file is closed.
func (w *dirWatcher) read() {
	defer close(w.done)
	defer close(w.Errors)
	defer close(w.Events)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				select {
				case w.Errors <- fmt.Errorf("reading inotify events: %w", err):
				case <-w.stop:
				}
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(raw.Len)], "\x00")
			off += unix.SizeofInotifyEvent + int(raw.Len)
			if raw.Mask&unix.IN_Q_OVERFLOW != 0 {
				select { // a re-list catches up; one error is enough
				case w.Errors <- errors.New("inotify queue overflow"):
				default:
				}
				continue
			}
			if ev, ok := w.event(int(raw.Wd), raw.Mask, string(name)); ok {
				select {
				case w.Events <- ev:
				case <-w.stop:
					return
				}
			}
		}
	}
}

// event maps a record of watch wd to an event; false for a stale watch.
// IN_IGNORED (the watch is gone: the directory was deleted, or Remove)
// reads as the directory's removal.
func (w *dirWatcher) event(wd int, mask uint32, name string) (dirEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wd != w.wd {
		return dirEvent{}, false
	}
	if mask&unix.IN_IGNORED != 0 {
		w.wd = -1
		mask |= unix.IN_DELETE_SELF
	}
	if name == "" {
		return dirEvent{Name: w.dir, Mask: mask}, true
	}
	return dirEvent{Name: filepath.Join(w.dir, name), Mask: mask}, true
}

// dirGone reports whether ev says the watched directory itself went.
func dirGone(ev dirEvent) bool {
	return ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0
}

// settling is what the latest event of a file says of its content; a
// burst's quiet period is that of its least settled file (loop.quiet).
type settling int

const (
	// unsettled: the file may still be being written (created, modified
	// or chmod-ed and not closed yet); also an event about no one file.
	unsettled settling = iota
	// settledFile: the file left the directory, or its writer closed it
	// (it may yet be written again, or come back: `rm f; cp g f`).
	settledFile
	// arrivedWhole: the file was renamed into the directory, complete by
	// construction (the atomic way to write a manifest).
	arrivedWhole
)

// fileSettling is ev's settling. A created, modified or chmod-ed file may
// still be being written: unsettled until its IN_CLOSE_WRITE. One that
// left the directory (deleted or renamed away: a removal cannot be
// half-done) or whose writer closed it is settled; a rename into the
// directory alone is arrivedWhole.
func fileSettling(ev dirEvent) settling {
	switch {
	case ev.Mask&(unix.IN_CREATE|unix.IN_MODIFY|unix.IN_ATTRIB) != 0,
		ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE) == 0:
		return unsettled
	case ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_CLOSE_WRITE) == 0:
		return arrivedWhole // only IN_MOVED_TO is left
	default:
		return settledFile
	}
}
