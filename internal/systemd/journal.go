package systemd

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/coreos/go-systemd/v22/journal"
)

// StderrIsJournal reports whether stderr is connected to journald's stream
// transport: JOURNAL_STREAM is set (systemd sets it for StandardError=journal,
// the default) and names stderr's device and inode, so a redirected stderr
// (skiff agent 2>file under systemd) keeps its timestamps. A malformed
// JOURNAL_STREAM counts as no journal.
func StderrIsJournal() bool {
	ok, err := journal.StderrIsJournalStream()
	return ok && err == nil
}

// Syslog priorities of sd-daemon(3)'s "<N>" line prefix.
const (
	prioErr     = 3
	prioWarning = 4
	prioInfo    = 6
	prioDebug   = 7
)

// priority maps a slog level to its syslog priority: Error and above err,
// Warn warning, Info info, below Info debug.
func priority(l slog.Level) int {
	switch {
	case l >= slog.LevelError:
		return prioErr
	case l >= slog.LevelWarn:
		return prioWarning
	case l >= slog.LevelInfo:
		return prioInfo
	}
	return prioDebug
}

// JournalHandler returns a slog.Handler for a stderr that journald reads
// (StderrIsJournal): slog's text format without the time (journald stamps
// every line itself) and each line prefixed by its level's syslog priority
// as "<N>" (sd-daemon(3)), which journald parses into PRIORITY= for
// `journalctl -p` and colours. The level stays in the line, for
// `journalctl -o cat`. One Write per record, as slog.TextHandler does.
func JournalHandler(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	o := slog.HandlerOptions{}
	if opts != nil {
		o = *opts
	}
	replace := o.ReplaceAttr
	o.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		if replace != nil {
			return replace(groups, a)
		}
		return a
	}
	h := &journalHandler{}
	out := &syncWriter{w: w}
	for i, p := range []int{prioErr, prioWarning, prioInfo, prioDebug} {
		h.byPrio[i] = slog.NewTextHandler(&prefixWriter{prefix: []byte{'<', byte('0' + p), '>'}, w: out}, &o)
	}
	return h
}

// journalHandler holds one text handler per priority, each writing its
// prefix: slog.TextHandler formats a record in one buffer and writes it
// once, so the prefix must be known by the writer.
type journalHandler struct {
	byPrio [4]slog.Handler // err, warning, info, debug
}

func (h *journalHandler) pick(l slog.Level) slog.Handler {
	switch priority(l) {
	case prioErr:
		return h.byPrio[0]
	case prioWarning:
		return h.byPrio[1]
	case prioInfo:
		return h.byPrio[2]
	}
	return h.byPrio[3]
}

func (h *journalHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.pick(l).Enabled(ctx, l)
}

func (h *journalHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.pick(r.Level).Handle(ctx, r)
}

func (h *journalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.each(func(s slog.Handler) slog.Handler { return s.WithAttrs(attrs) })
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	return h.each(func(s slog.Handler) slog.Handler { return s.WithGroup(name) })
}

func (h *journalHandler) each(f func(slog.Handler) slog.Handler) slog.Handler {
	out := &journalHandler{}
	for i, s := range h.byPrio {
		out.byPrio[i] = f(s)
	}
	return out
}

// prefixWriter writes prefix and p in one Write to w.
type prefixWriter struct {
	prefix []byte
	w      *syncWriter
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if err := p.w.write(p.prefix, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// syncWriter serializes the writes of the four handlers (each locks only
// its own) and joins a prefix and a line in a buffer it reuses.
type syncWriter struct {
	mu  sync.Mutex
	buf []byte
	w   io.Writer
}

func (s *syncWriter) write(prefix, line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(append(s.buf[:0], prefix...), line...)
	_, err := s.w.Write(s.buf)
	if cap(s.buf) > 64<<10 {
		s.buf = nil // do not keep a huge line's buffer
	}
	return err
}
