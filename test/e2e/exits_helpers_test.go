package e2e

import (
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/typeurl/v2"

	ctrd "github.com/skiffnode/skiff/runtime/containerd"
)

// exitEvent is one container exit as containerd reported it.
type exitEvent struct {
	code uint32
	at   time.Time
}

// exitLog records the exits of containers' main processes from
// containerd's /tasks/exit events, from its start until the test ends:
// an exit is seen even when the agent removes the container before a poll
// could see it exited.
type exitLog struct {
	mu     sync.Mutex
	exits  map[string]exitEvent
	errs   []error
	notify chan struct{} // closed and replaced at each change
}

// watchExits subscribes to the managed containerd's exit events; call it
// before the exits of interest (containerd sends none from the past).
func (e *Env) watchExits(t *testing.T) *exitLog {
	t.Helper()
	sock := strings.TrimPrefix(e.s.criEndpoint(), "unix://")
	client, err := containerd.New(sock, containerd.WithDefaultNamespace(ctrd.Namespace))
	if err != nil {
		t.Fatalf("connect to containerd at %s: %v", sock, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	envs, errs := client.Subscribe(ctx, `topic=="/tasks/exit",namespace==`+ctrd.Namespace)
	l := &exitLog{exits: map[string]exitEvent{}, notify: make(chan struct{})}
	done := make(chan struct{})
	go func() { // owned by the test: stopped and waited for in Cleanup
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case env := <-envs:
				if env == nil || env.Event == nil {
					continue
				}
				v, err := typeurl.UnmarshalAny(env.Event)
				if ev, ok := v.(*apievents.TaskExit); err == nil && ok && ev.ID == ev.ContainerID {
					l.add(ev.ContainerID, exitEvent{code: ev.ExitStatus, at: ev.ExitedAt.AsTime()}, nil)
				}
			case err := <-errs:
				if ctx.Err() == nil {
					l.add("", exitEvent{}, err)
				}
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = client.Close()
	})
	return l
}

func (l *exitLog) add(id string, ev exitEvent, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errs = append(l.errs, err)
	} else if _, seen := l.exits[id]; !seen {
		l.exits[id] = ev
	}
	close(l.notify)
	l.notify = make(chan struct{})
}

// wait returns the first exit of container id; it fails the test when
// containerd reports none within timeout or the event stream broke.
func (l *exitLog) wait(t *testing.T, id string, timeout time.Duration) exitEvent {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		ev, ok := l.exits[id]
		errs, ch := l.errs, l.notify
		l.mu.Unlock()
		switch {
		case ok:
			return ev
		case len(errs) > 0:
			t.Fatalf("containerd exit events broke before container %s exited: %v", id, errs)
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("containerd reported no exit of container %s within %s", id, timeout)
		}
	}
}

// openLog opens a container's CRI log file so that it stays readable
// after the agent removes the pod's log directory; closed when the test
// ends.
func openLog(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open container log: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// heldLogLineTime is lineTime over a log held open by openLog: all the
// container wrote, even once its file was removed.
func heldLogLineTime(t *testing.T, f *os.File, part string) (time.Time, bool) {
	t.Helper()
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
	if err != nil {
		t.Fatalf("read container log: %v", err)
	}
	return lineTime(data, part)
}
