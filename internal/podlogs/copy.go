package podlogs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// DefaultPollInterval is how often Copy looks for new output while following.
//
// Copy polls instead of using fsnotify: one stat and one read per interval is
// cheap, works on every filesystem (inotify misses writes on some overlay and
// network filesystems), needs no watcher lifecycle per request, and 200ms is
// below what a person watching `logs -f` notices.
const DefaultPollInterval = 200 * time.Millisecond

// maxPending bounds the bytes of one reassembled line kept in memory. A line
// longer than this (a container writing without newlines) is written out in
// pieces of this size.
const maxPending = 1 << 20

// ReadOptions selects what Copy writes.
type ReadOptions struct {
	// Follow keeps reading as the file grows (see Copy).
	Follow bool
	// TailLines writes only the last TailLines lines present when Copy
	// starts; a negative value writes all of them, 0 none (like
	// `kubectl logs --tail`). Lines are counted after reassembling partial
	// lines and after the Stream filter.
	TailLines int
	// Timestamps prefixes each line with its RFC3339Nano time and a space
	// (the time of the line's first part), as `kubectl logs --timestamps`.
	Timestamps bool
	// Stream is Stdout, Stderr or "" for both.
	Stream string
	// Since, unless zero, skips the lines written before it (each
	// physical line by its own time, as the kubelet's ReadLogs).
	Since time.Time
	// LimitBytes, if positive, ends the output after that many bytes
	// (timestamps included), possibly within a line; Copy then returns
	// nil, also while following.
	LimitBytes int64
	// Running, if set, is asked while following each time Copy has caught
	// up with the file; once it reports false Copy reads what is left and
	// returns nil. It is how a caller stops following a container that has
	// exited. With Running set, a log file that disappears is taken to be
	// rotated and Copy waits for it to come back. Must be safe to call from
	// Copy's goroutine.
	Running func() bool
	// PollInterval overrides DefaultPollInterval (0: the default).
	PollInterval time.Duration
}

// Copy writes the container output stored in the CRI log file at path to w:
// content only, with partial ("P") lines joined to the following line of the
// same stream, each reassembled line ending in "\n". Malformed lines are
// skipped. A final partial line with no continuation is written without a
// newline.
//
// Without Follow, Copy returns after writing what the file holds. With
// Follow, it blocks and keeps writing new lines as the file grows, flushing w
// each time it catches up, until:
//   - ctx is done: returns ctx.Err();
//   - opts.Running reports false: returns nil after the rest of the file;
//   - the file is removed and opts.Running is nil: returns nil.
//
// When the file at path is replaced by another one (log rotation), Copy
// finishes the old file and continues with the new one, as the kubelet does.
// Errors opening the file wrap the os error (errors.Is(err, fs.ErrNotExist)).
// Copy is safe to call concurrently on the same file.
func Copy(ctx context.Context, w io.Writer, path string, opts ReadOptions) error {
	if opts.LimitBytes > 0 {
		w = &limitedWriter{w: w, n: opts.LimitBytes}
	}
	err := copyLog(ctx, w, path, opts)
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}

// errLimit ends a Copy whose LimitBytes were written.
var errLimit = errors.New("log byte limit reached")

// limitedWriter writes at most n more bytes, then fails with errLimit.
type limitedWriter struct {
	w io.Writer
	n int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errLimit
	}
	short := int64(len(p)) > l.n
	if short {
		p = p[:l.n]
	}
	n, err := l.w.Write(p)
	l.n -= int64(n)
	if err == nil && short {
		err = errLimit
	}
	return n, err
}

func copyLog(ctx context.Context, w io.Writer, path string, opts ReadOptions) error {
	if opts.Stream != "" && opts.Stream != Stdout && opts.Stream != Stderr {
		return fmt.Errorf("unknown log stream %q", opts.Stream)
	}
	f, err := openLog(path)
	if err != nil {
		return fmt.Errorf("open container log: %w", err)
	}
	c := &copier{
		opts:    opts,
		path:    path,
		out:     bufio.NewWriterSize(w, 32<<10),
		pending: make(map[string]*pendingLine, 2),
	}
	c.use(f)
	defer func() { _ = c.file.Close() }()

	if opts.TailLines >= 0 {
		c.tail = &ring{max: opts.TailLines}
	}
	if err := c.readAvailable(!opts.Follow); err != nil {
		return err
	}
	if !opts.Follow {
		c.flushPending()
	}
	if c.tail != nil {
		c.tail.writeTo(c.out)
		c.tail = nil
	}
	if !opts.Follow {
		return c.flushOut()
	}
	return c.follow(ctx)
}

// copier is the state of one Copy call.
type copier struct {
	opts    ReadOptions
	path    string
	out     *bufio.Writer
	file    *os.File
	in      *bufio.Reader
	carry   []byte                  // physical line read so far
	pending map[string]*pendingLine // unfinished reassembled line per stream
	tail    *ring                   // non-nil while collecting the tail
	scratch []byte
}

// pendingLine is a reassembled line still waiting for its last part.
type pendingLine struct {
	time    time.Time
	buf     []byte
	started bool // a first piece (and the timestamp) was already written
}

func (c *copier) use(f *os.File) {
	c.file = f
	c.in = bufio.NewReaderSize(f, 64<<10)
	c.carry = c.carry[:0]
}

// readAvailable handles every complete physical line up to the current end
// of the file. With final, an unterminated last line is handled too;
// otherwise it is kept until the rest of it arrives.
func (c *copier) readAvailable(final bool) error {
	for {
		chunk, err := c.in.ReadSlice('\n')
		c.carry = append(c.carry, chunk...)
		switch {
		case err == nil:
			c.handle(c.carry)
			c.carry = c.carry[:0]
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			if final && len(c.carry) > 0 {
				c.handle(c.carry)
				c.carry = c.carry[:0]
			}
			return nil
		default:
			return fmt.Errorf("read container log: %w", err)
		}
	}
}

// handle processes one physical line. It does not retain line.
func (c *copier) handle(line []byte) {
	e, err := ParseLine(line)
	if err != nil || (c.opts.Stream != "" && e.Stream != c.opts.Stream) || (!c.opts.Since.IsZero() && e.Time.Before(c.opts.Since)) {
		return
	}
	p := c.pending[e.Stream]
	if p == nil {
		p = &pendingLine{}
		c.pending[e.Stream] = p
	}
	if len(p.buf) == 0 && !p.started {
		p.time = e.Time
	}
	p.buf = append(p.buf, e.Content...)
	switch {
	case !e.Partial:
		c.emit(p, true)
	case len(p.buf) >= maxPending:
		c.emit(p, false)
	}
}

// emit writes p's buffered content, as a whole line when complete.
func (c *copier) emit(p *pendingLine, complete bool) {
	b := c.scratch[:0]
	if c.opts.Timestamps && !p.started {
		b = p.time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, ' ')
	}
	b = append(b, p.buf...)
	if complete {
		b = append(b, '\n')
	}
	c.scratch = b
	if c.tail != nil {
		c.tail.push(bytes.Clone(b))
	} else {
		_, _ = c.out.Write(b) // a write error sticks in c.out; see flushOut
	}
	p.buf = p.buf[:0]
	p.started = !complete
}

// flushPending writes unfinished lines as they are, stdout first.
func (c *copier) flushPending() {
	for _, s := range []string{Stdout, Stderr} {
		if p := c.pending[s]; p != nil && len(p.buf) > 0 {
			c.emit(p, false)
		}
	}
}

func (c *copier) flushOut() error {
	if err := c.out.Flush(); err != nil {
		return fmt.Errorf("write container log: %w", err)
	}
	return nil
}

// follow implements Copy's Follow mode after the initial read.
func (c *copier) follow(ctx context.Context) error {
	interval := c.opts.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := c.flushOut(); err != nil {
			return err
		}
		if c.opts.Running != nil && !c.opts.Running() {
			return c.finish()
		}
		select {
		case <-ctx.Done():
			c.flushPending()
			_ = c.flushOut()
			return ctx.Err()
		case <-ticker.C:
		}
		if err := c.readAvailable(false); err != nil {
			return err
		}
		done, err := c.checkRotation()
		if done || err != nil {
			return err
		}
	}
}

// finish reads the rest of the file and writes everything still buffered.
func (c *copier) finish() error {
	if err := c.readAvailable(true); err != nil {
		return err
	}
	c.flushPending()
	return c.flushOut()
}

// checkRotation looks at what is now at c.path. It switches to a new file
// that replaced the one being read, and reports done when the file is gone
// and no Running callback says to wait for it.
func (c *copier) checkRotation() (done bool, err error) {
	now, err := os.Lstat(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		if c.opts.Running != nil {
			return false, nil // rotation in progress; Running decides
		}
		return true, c.finish()
	}
	if err != nil {
		return false, fmt.Errorf("stat container log: %w", err)
	}
	cur, err := c.file.Stat()
	if err != nil {
		return false, fmt.Errorf("stat container log: %w", err)
	}
	if os.SameFile(now, cur) {
		return false, nil
	}
	if err := c.readAvailable(true); err != nil {
		return false, err
	}
	f, err := openLog(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // replaced and gone again; look next time
	}
	if err != nil {
		return false, fmt.Errorf("reopen rotated container log: %w", err)
	}
	_ = c.file.Close()
	c.use(f)
	return false, c.readAvailable(false)
}

// ring keeps the last max lines pushed.
type ring struct {
	lines [][]byte
	next  int
	max   int
}

func (r *ring) push(b []byte) {
	if r.max <= 0 {
		return
	}
	if len(r.lines) < r.max {
		r.lines = append(r.lines, b)
		return
	}
	r.lines[r.next] = b
	r.next = (r.next + 1) % r.max
}

func (r *ring) writeTo(w io.Writer) {
	for i := range r.lines {
		_, _ = w.Write(r.lines[(r.next+i)%len(r.lines)])
	}
}
