package podlogs

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// fakeRotateRuntime plays the runtime: it lists the containers of logs,
// and a reopen creates the log file again (as containerd does).
type fakeRotateRuntime struct {
	mu       sync.Mutex
	logs     []RunningLog
	reopened []string
	failOpen error
}

func (f *fakeRotateRuntime) RunningContainerLogs(context.Context) ([]RunningLog, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.logs), nil
}

func (f *fakeRotateRuntime) ReopenContainerLog(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failOpen != nil {
		return f.failOpen
	}
	f.reopened = append(f.reopened, id)
	for _, l := range f.logs {
		if l.ID == id {
			return os.WriteFile(l.Path, nil, 0o640)
		}
	}
	return errors.New("no such container")
}

var rotT0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func newTestRotator(t *testing.T, rt RotateRuntime, clk *clocktesting.FakeClock, maxFiles, workers int) *Rotator {
	t.Helper()
	r, err := NewRotator(RotatorConfig{
		Runtime: rt, MaxSize: 10, MaxFiles: maxFiles, Clock: clk, MaxWorkers: workers,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// names lists the files of dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRotateKeepsMaxFiles: a log over MaxSize is renamed with the
// kubelet's timestamp and reopened; older rotated files are gzipped, the
// newest stays plain; with MaxFiles 3 at most 3 files remain.
func TestRotateKeepsMaxFiles(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	small := filepath.Join(dir, "1.log")
	rt := &fakeRotateRuntime{logs: []RunningLog{{ID: "c", Path: log}, {ID: "small", Path: small}}}
	clk := clocktesting.NewFakeClock(rotT0)
	r := newTestRotator(t, rt, clk, 3, 2)
	if err := os.WriteFile(small, []byte("tiny\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	var want [][]string
	for _, content := range []string{"first chunk\n", "second chunk\n", "third chunk\n", "short\n"} {
		if err := os.WriteFile(log, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := r.RotateOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		want = append(want, names(t, dir))
		clk.Step(time.Minute)
	}
	expect := [][]string{
		{"0.log", "0.log.20261124-100000", "1.log"},
		{"0.log", "0.log.20261124-100000.gz", "0.log.20261124-100100", "1.log"},
		{"0.log", "0.log.20261124-100100.gz", "0.log.20261124-100200", "1.log"},
		{"0.log", "0.log.20261124-100100.gz", "0.log.20261124-100200", "1.log"}, // under MaxSize: no rotation
	}
	for i := range expect {
		if !slices.Equal(want[i], expect[i]) {
			t.Errorf("after pass %d: files %v, want %v", i+1, want[i], expect[i])
		}
	}
	if got := gunzip(t, filepath.Join(dir, "0.log.20261124-100100.gz")); got != "second chunk\n" {
		t.Errorf("compressed rotated log holds %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "0.log.20261124-100200")); string(got) != "third chunk\n" {
		t.Errorf("newest rotated log holds %q", got)
	}
	if got, _ := os.ReadFile(log); string(got) != "short\n" {
		t.Errorf("current log holds %q", got)
	}
	if !slices.Equal(rt.reopened, []string{"c", "c", "c"}) {
		t.Errorf("reopened %v, want c three times", rt.reopened)
	}
}

// TestRotateUndoesRenameWhenReopenFails: a container that cannot reopen
// its log (it stopped meanwhile) keeps its log where it was.
func TestRotateUndoesRenameWhenReopenFails(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	rt := &fakeRotateRuntime{logs: []RunningLog{{ID: "c", Path: log}}, failOpen: errors.New("not running")}
	r := newTestRotator(t, rt, clocktesting.NewFakeClock(rotT0), 5, 1)
	if err := os.WriteFile(log, []byte("a long enough line\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := r.RotateOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"0.log"}) {
		t.Errorf("files %v, want the log back in place", got)
	}
}

// TestRotateCleansLeftoversAndReopensMissingLog: temporary files and plain
// files already compressed go; a running container without a log file is
// reopened.
func TestRotateCleansLeftoversAndReopensMissingLog(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	// An interrupted compression: the .gz is complete, the plain file
	// stayed (its content must not replace the .gz's).
	for _, f := range []string{"0.log.20261124-090000", "0.log.20261124-091000.gz.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("stale"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	writeGzip(t, filepath.Join(dir, "0.log.20261124-090000.gz"), "complete")
	rt := &fakeRotateRuntime{logs: []RunningLog{{ID: "c", Path: log}}}
	r := newTestRotator(t, rt, clocktesting.NewFakeClock(rotT0), 5, 1)
	if err := r.RotateOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(log); err != nil || !slices.Equal(rt.reopened, []string{"c"}) {
		t.Fatalf("missing log not reopened: %v, reopened %v", err, rt.reopened)
	}
	if err := os.WriteFile(log, []byte("a long enough line\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := r.RotateOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"0.log", "0.log.20261124-090000.gz", "0.log.20261124-100000"}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	if got := gunzip(t, filepath.Join(dir, "0.log.20261124-090000.gz")); got != "complete" {
		t.Errorf("the compressed log holds %q, want its own content", got)
	}
}

func writeGzip(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := gzip.NewWriter(f)
	if _, err := io.WriteString(w, content); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveContainerLogs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"0.log", "0.log.20261124-090000.gz", "0.log.20261124-091000", "1.log"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveContainerLogs(filepath.Join(dir, "0.log")); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"1.log"}) {
		t.Errorf("files %v, want 1.log only", got)
	}
	if err := RemoveContainerLogs(filepath.Join(dir, "0.log")); err != nil {
		t.Errorf("second removal: %v", err)
	}
}

func TestNewRotatorValidates(t *testing.T) {
	for _, cfg := range []RotatorConfig{
		{Runtime: &fakeRotateRuntime{}, MaxSize: 10, MaxFiles: 1},
		{Runtime: &fakeRotateRuntime{}, MaxSize: 0, MaxFiles: 5},
	} {
		if _, err := NewRotator(cfg); err == nil {
			t.Errorf("NewRotator(%+v) accepted", cfg)
		}
	}
	for in, want := range map[string]int64{"10Mi": 10 << 20, "1Ki": 1024, "200": 200} {
		if got, err := ParseMaxSize(in); err != nil || got != want {
			t.Errorf("ParseMaxSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "0", "ten"} {
		if _, err := ParseMaxSize(in); err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseMaxSize(%q): error %v", in, err)
		}
	}
}

// TestRotatorRunsEveryInterval: Run checks at each tick of its clock.
func TestRotatorRunsEveryInterval(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	rt := &fakeRotateRuntime{logs: []RunningLog{{ID: "c", Path: log}}}
	clk := clocktesting.NewFakeClock(rotT0)
	r := newTestRotator(t, rt, clk, 5, 1)
	if err := os.WriteFile(log, []byte("a long enough line\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Run never waited")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(DefaultMonitorInterval)
	for {
		rt.mu.Lock()
		n := len(rt.reopened)
		rt.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no rotation after an interval")
		}
		time.Sleep(time.Millisecond)
	}
}
