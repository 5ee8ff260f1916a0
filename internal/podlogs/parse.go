package podlogs

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Stream names used in the CRI log format.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// ErrInvalidLine is wrapped by ParseLine errors for lines that are not in the
// CRI log format.
var ErrInvalidLine = errors.New("invalid CRI log line")

// Entry is one line of a CRI log file.
type Entry struct {
	// Time is when the runtime read the output from the container.
	Time time.Time
	// Stream is Stdout or Stderr.
	Stream string
	// Partial is true for the "P" tag: the runtime split a long line and
	// Content continues in the next entry of the same stream.
	Partial bool
	// Content is the output, without the trailing newline. It aliases the
	// line passed to ParseLine.
	Content []byte
}

// ParseLine parses one CRI log line:
//
//	<RFC3339Nano time> <stdout|stderr> <tags> <content>
//
// where tags is ":"-separated and only its first element ("F" full, "P"
// partial) is interpreted, for forward compatibility as the kubelet does. A
// trailing "\n" on line is ignored. Errors wrap ErrInvalidLine. Pure, safe
// for concurrent use.
func ParseLine(line []byte) (Entry, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	ts, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return Entry{}, fmt.Errorf("%w: timestamp not found", ErrInvalidLine)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return Entry{}, fmt.Errorf("%w: timestamp: %w", ErrInvalidLine, err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte(" "))
	if !ok {
		return Entry{}, fmt.Errorf("%w: log tag not found", ErrInvalidLine)
	}
	if s := string(stream); s != Stdout && s != Stderr {
		return Entry{}, fmt.Errorf("%w: unexpected stream type %q", ErrInvalidLine, s)
	}
	// A line with an empty content may come without the separator after
	// the tag; accept it.
	tags, content, _ := bytes.Cut(rest, []byte(" "))
	if len(tags) == 0 {
		return Entry{}, fmt.Errorf("%w: log tag not found", ErrInvalidLine)
	}
	first, _, _ := bytes.Cut(tags, []byte(":"))
	return Entry{
		Time:    t,
		Stream:  string(stream),
		Partial: string(first) == "P",
		Content: content,
	}, nil
}
