package vm

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// cpioEntry is one entry read back from a newc archive.
type cpioEntry struct {
	name  string
	mode  uint32
	nlink uint32
	major uint32
	minor uint32
	data  string
}

// readCPIO parses a newc archive the way the kernel does, checking magic,
// alignment and the trailer; it returns the entries before the trailer.
func readCPIO(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	align := func() { off = (off + 3) &^ 3 }
	for {
		if off+110 > len(b) {
			t.Fatalf("archive ends inside a header at %d", off)
		}
		h := string(b[off : off+110])
		if h[:6] != cpioMagic {
			t.Fatalf("bad magic %q at %d", h[:6], off)
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(h[6+8*i:14+8*i], 16, 32)
			if err != nil {
				t.Fatalf("header field %d at %d: %v", i, off, err)
			}
			return uint32(v)
		}
		mode, nlink, size, major, minor, namesize := field(1), field(4), int(field(6)), field(9), field(10), int(field(11))
		off += 110
		name := string(b[off : off+namesize])
		if !strings.HasSuffix(name, "\x00") {
			t.Fatalf("name %q not NUL-terminated", name)
		}
		name = strings.TrimSuffix(name, "\x00")
		off += namesize
		align()
		if name == cpioTrailer {
			if len(b)%512 != 0 {
				t.Errorf("archive length %d is not a multiple of 512", len(b))
			}
			return out
		}
		out = append(out, cpioEntry{name: name, mode: mode, nlink: nlink, major: major, minor: minor, data: string(b[off : off+size])})
		off += size
		align()
	}
}

func TestCPIOWriterRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		headers []cpioHeader
		data    []string
	}{
		{name: "empty archive"},
		{
			name: "every kind, sizes around the 4-byte padding",
			headers: []cpioHeader{
				{Name: "d", Mode: modeDir | 0o755},
				{Name: "d/f0", Mode: modeRegular | 0o644},
				{Name: "d/f1", Mode: modeRegular | 0o600, Size: 1},
				{Name: "d/f4", Mode: modeRegular | 0o755, Size: 4},
				{Name: "d/f7", Mode: modeRegular | 0o644, Size: 7},
				{Name: "link", Mode: modeSymlink | 0o777, Size: 3},
				{Name: "dev/null", Mode: modeCharDev | 0o666, RdevMajor: 1, RdevMinor: 3},
			},
			data: []string{"", "", "x", "abcd", "1234567", "d/f", ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := newCPIOWriter(&buf)
			for i, h := range tt.headers {
				if err := w.WriteHeader(h); err != nil {
					t.Fatal(err)
				}
				if _, err := io.WriteString(w, tt.data[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got := readCPIO(t, buf.Bytes())
			if len(got) != len(tt.headers) {
				t.Fatalf("read %d entries, wrote %d", len(got), len(tt.headers))
			}
			for i, h := range tt.headers {
				e := got[i]
				wantLinks := uint32(1)
				if h.Mode&0o170000 == modeDir {
					wantLinks = 2
				}
				if e.name != h.Name || e.mode != h.Mode || e.data != tt.data[i] || e.major != h.RdevMajor ||
					e.minor != h.RdevMinor || e.nlink != wantLinks {
					t.Errorf("entry %d = %+v, want %+v with data %q and nlink %d", i, e, h, tt.data[i], wantLinks)
				}
			}
		})
	}
}

func TestCPIOWriterErrors(t *testing.T) {
	tests := []struct {
		name string
		run  func(w *cpioWriter) error
		want string
	}{
		{"absolute name", func(w *cpioWriter) error { return w.WriteHeader(cpioHeader{Name: "/etc"}) }, "invalid entry name"},
		{"empty name", func(w *cpioWriter) error { return w.WriteHeader(cpioHeader{}) }, "invalid entry name"},
		{"negative size", func(w *cpioWriter) error { return w.WriteHeader(cpioHeader{Name: "f", Size: -1}) }, "out of range"},
		{"too large", func(w *cpioWriter) error { return w.WriteHeader(cpioHeader{Name: "f", Size: 1 << 32}) }, "out of range"},
		{"data longer than size", func(w *cpioWriter) error {
			if err := w.WriteHeader(cpioHeader{Name: "f", Size: 2}); err != nil {
				return err
			}
			_, err := w.Write([]byte("abc"))
			return err
		}, "exceeds the entry size"},
		{"data missing before next header", func(w *cpioWriter) error {
			if err := w.WriteHeader(cpioHeader{Name: "f", Size: 2}); err != nil {
				return err
			}
			return w.WriteHeader(cpioHeader{Name: "g"})
		}, "missing before"},
		{"data missing at close", func(w *cpioWriter) error {
			if err := w.WriteHeader(cpioHeader{Name: "f", Size: 2}); err != nil {
				return err
			}
			return w.Close()
		}, "missing before"},
		{"sink fails", func(w *cpioWriter) error {
			w.w.Reset(failWriter{})
			if err := w.WriteHeader(cpioHeader{Name: "f"}); err != nil {
				return err
			}
			return w.Close()
		}, "disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run(newCPIOWriter(io.Discard))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }
