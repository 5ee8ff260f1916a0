package podlogs

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCopy(t *testing.T) {
	all := ReadOptions{TailLines: -1}
	tests := []struct {
		name    string
		fixture string
		opts    ReadOptions
		want    string
	}{
		{name: "all lines, partials joined, malformed skipped", fixture: "mixed.log", opts: all,
			want: "hello\noops\npartial line\n\nsecond error\nlast\n"},
		{name: "tail 2", fixture: "mixed.log", opts: ReadOptions{TailLines: 2},
			want: "second error\nlast\n"},
		{name: "tail 0 writes nothing", fixture: "mixed.log", opts: ReadOptions{TailLines: 0}, want: ""},
		{name: "tail larger than file", fixture: "mixed.log", opts: ReadOptions{TailLines: 100},
			want: "hello\noops\npartial line\n\nsecond error\nlast\n"},
		{name: "stdout only, tail counts after filter", fixture: "mixed.log",
			opts: ReadOptions{TailLines: 3, Stream: Stdout}, want: "partial line\n\nlast\n"},
		{name: "stderr only", fixture: "mixed.log", opts: ReadOptions{TailLines: -1, Stream: Stderr},
			want: "oops\nsecond error\n"},
		{name: "timestamps use the first part's time", fixture: "mixed.log",
			opts: ReadOptions{TailLines: -1, Timestamps: true, Stream: Stdout},
			want: "2024-05-01T10:00:00.000000001Z hello\n2024-05-01T10:00:01.5Z partial line\n" +
				"2024-05-01T10:00:02Z \n2024-05-01T10:00:04Z last\n"},
		{name: "unterminated final partial line", fixture: "unterminated.log", opts: all,
			want: "done\nno newline yet"},
		{name: "since skips older lines", fixture: "mixed.log",
			opts: ReadOptions{TailLines: -1, Since: time.Date(2024, 5, 1, 10, 0, 2, 0, time.UTC)}, want: "\nsecond error\nlast\n"},
		{name: "limit bytes cuts within a line", fixture: "mixed.log", opts: ReadOptions{TailLines: -1, LimitBytes: 8},
			want: "hello\noo"},
		{name: "limit bytes after tail, timestamps count", fixture: "mixed.log",
			opts: ReadOptions{TailLines: 1, Timestamps: true, LimitBytes: 21}, want: "2024-05-01T10:00:04Z "},
		{name: "limit larger than the log", fixture: "mixed.log", opts: ReadOptions{TailLines: -1, LimitBytes: 1 << 20},
			want: "hello\noops\npartial line\n\nsecond error\nlast\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Copy(context.Background(), &out, filepath.Join("testdata", tt.fixture), tt.opts)
			if err != nil {
				t.Fatalf("Copy: %v", err)
			}
			if out.String() != tt.want {
				t.Errorf("Copy wrote %q, want %q", out.String(), tt.want)
			}
		})
	}
}

func TestCopyErrors(t *testing.T) {
	err := Copy(context.Background(), &bytes.Buffer{}, filepath.Join(t.TempDir(), "0.log"), ReadOptions{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Copy(missing file) = %v, want fs.ErrNotExist", err)
	}
	err = Copy(context.Background(), &bytes.Buffer{}, "testdata/mixed.log", ReadOptions{Stream: "stdin"})
	if err == nil {
		t.Error("Copy(Stream: stdin) succeeded, want error")
	}
}

// notifyBuffer is a concurrency-safe writer that signals every write.
type notifyBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{}
}

func newNotifyBuffer() *notifyBuffer {
	return &notifyBuffer{written: make(chan struct{}, 1)}
}

func (b *notifyBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case b.written <- struct{}{}:
	default:
	}
	return n, err
}

func (b *notifyBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor blocks until the buffer holds exactly want, failing after a
// generous deadline. It waits on write notifications, not on sleeps.
func (b *notifyBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for b.String() != want {
		select {
		case <-b.written:
		case <-deadline:
			t.Fatalf("output = %q, want %q", b.String(), want)
		}
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// startCopy runs Copy in the background; the returned channel yields its error.
func startCopy(ctx context.Context, w *notifyBuffer, path string, opts ReadOptions) <-chan error {
	opts.Follow = true
	opts.PollInterval = time.Millisecond
	errc := make(chan error, 1)
	go func() { errc <- Copy(ctx, w, path, opts) }()
	return errc
}

func waitErr(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Copy did not return")
		return nil
	}
}

func TestCopyFollowAppendsAndStopsOnCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	appendFile(t, path, "2024-05-01T10:00:00Z stdout F one\n2024-05-01T10:00:01Z stdout F two\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := newNotifyBuffer()
	errc := startCopy(ctx, out, path, ReadOptions{TailLines: 1})
	out.waitFor(t, "two\n")

	appendFile(t, path, "2024-05-01T10:00:02Z stdout F three\n")
	out.waitFor(t, "two\nthree\n")

	// A line split by the runtime and a physical line written in two
	// pieces both come out whole.
	appendFile(t, path, "2024-05-01T10:00:03Z stdout P fo")
	appendFile(t, path, "u\n2024-05-01T10:00:04Z stderr F err\n2024-05-01T10:00:05Z stdout F r\n")
	out.waitFor(t, "two\nthree\nerr\nfour\n")

	cancel()
	if err := waitErr(t, errc); !errors.Is(err, context.Canceled) {
		t.Errorf("Copy after cancel = %v, want context.Canceled", err)
	}
}

func TestCopyFollowStopsWhenFileRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	appendFile(t, path, "2024-05-01T10:00:00Z stdout F one\n")
	out := newNotifyBuffer()
	errc := startCopy(context.Background(), out, path, ReadOptions{TailLines: -1})
	out.waitFor(t, "one\n")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := waitErr(t, errc); err != nil {
		t.Errorf("Copy after removal = %v, want nil", err)
	}
}

func TestCopyFollowStopsWhenNotRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	appendFile(t, path, "2024-05-01T10:00:00Z stdout F one\n")
	var running atomic.Bool
	running.Store(true)
	out := newNotifyBuffer()
	errc := startCopy(context.Background(), out, path, ReadOptions{TailLines: -1, Running: running.Load})
	out.waitFor(t, "one\n")

	// The last words of the container are written before it stops.
	appendFile(t, path, "2024-05-01T10:00:01Z stdout F bye\n2024-05-01T10:00:02Z stdout P unfinished")
	running.Store(false)
	if err := waitErr(t, errc); err != nil {
		t.Fatalf("Copy after exit = %v, want nil", err)
	}
	if got, want := out.String(), "one\nbye\nunfinished"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestCopyFollowRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	appendFile(t, path, "2024-05-01T10:00:00Z stdout F old\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := newNotifyBuffer()
	errc := startCopy(ctx, out, path, ReadOptions{TailLines: -1, Running: func() bool { return true }})
	out.waitFor(t, "old\n")

	appendFile(t, path, "2024-05-01T10:00:01Z stdout F before rotation\n")
	if err := os.Rename(path, path+".20240501-100001"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, "2024-05-01T10:00:02Z stdout F after rotation\n")
	out.waitFor(t, "old\nbefore rotation\nafter rotation\n")
	if s := out.String(); strings.Count(s, "old") != 1 {
		t.Errorf("rotation repeated output: %q", s)
	}
	cancel()
	if err := waitErr(t, errc); !errors.Is(err, context.Canceled) {
		t.Errorf("Copy after cancel = %v, want context.Canceled", err)
	}
}

// TestCopyFollowEndsAtLimit: a followed log ends (nil) once LimitBytes
// were written, as `kubectl logs -f --limit-bytes` does.
func TestCopyFollowEndsAtLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	appendFile(t, path, "2024-05-01T10:00:00Z stdout F one\n")
	out := newNotifyBuffer()
	errc := startCopy(context.Background(), out, path, ReadOptions{TailLines: -1, Follow: true, LimitBytes: 6, PollInterval: time.Millisecond})
	out.waitFor(t, "one\n")
	appendFile(t, path, "2024-05-01T10:00:01Z stdout F two\n")
	if err := waitErr(t, errc); err != nil {
		t.Errorf("Copy at the limit = %v, want nil", err)
	}
	out.waitFor(t, "one\ntw")
}
