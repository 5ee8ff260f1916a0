package staticpods

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// failAfter bounds every wait; success paths never wait for it.
const failAfter = 5 * time.Second

const testNode = "node-1"

// podManifest is a valid manifest for pod name with one container.
func podManifest(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
		"\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
}

// writeAtomic writes a file the way careful tools do: a hidden temporary
// file renamed into place, so no reader sees a partial file.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// logRecorder is a slog.Handler that keeps every record.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// errorsFor returns the messages of error-level records whose "path" attr
// is path ("" matches any).
func (h *logRecorder) errorsFor(path string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if r.Level < slog.LevelError {
			continue
		}
		match := path == ""
		var msg strings.Builder
		msg.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "path" && a.Value.String() == path {
				match = true
			}
			msg.WriteString(" " + a.String())
			return true
		})
		if match {
			out = append(out, msg.String())
		}
	}
	return out
}

// harness runs a Source and collects sink calls on a channel.
type harness struct {
	t     *testing.T
	src   *Source
	logs  *logRecorder
	calls chan []*v1.Pod
}

// start runs a Source on cfg (Dir set by the caller; NodeName and Logger
// filled in) until the test ends.
func start(t *testing.T, cfg Config) *harness {
	t.Helper()
	logs := &logRecorder{}
	if cfg.NodeName == "" {
		cfg.NodeName = testNode
	}
	cfg.Logger = slog.New(logs)
	src, err := New(cfg)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	h := &harness{t: t, src: src, logs: logs, calls: make(chan []*v1.Pod, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var inSink sync.Mutex
	go func() {
		done <- src.Run(ctx, func(pods []*v1.Pod) {
			if !inSink.TryLock() {
				t.Errorf("sink called concurrently")
				return
			}
			defer inSink.Unlock()
			h.calls <- pods
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run() = %v, want nil after cancel", err)
			}
		case <-time.After(failAfter):
			t.Errorf("Run() did not return after cancel")
		}
	})
	return h
}

// next returns the next sink call.
func (h *harness) next() []*v1.Pod {
	h.t.Helper()
	select {
	case pods := <-h.calls:
		return pods
	case <-time.After(failAfter):
		h.t.Fatalf("no sink call within %v", failAfter)
		return nil
	}
}

// expectNoCall fails if the sink is called within d.
func (h *harness) expectNoCall(d time.Duration) {
	h.t.Helper()
	select {
	case pods := <-h.calls:
		h.t.Fatalf("unexpected sink call with %v", podNames(pods))
	case <-time.After(d):
	}
}

func podNames(pods []*v1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	sort.Strings(names)
	return names
}

func wantNames(t *testing.T, pods []*v1.Pod, want ...string) {
	t.Helper()
	got := podNames(pods)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pods = %v, want %v", got, want)
	}
}
