package pod

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestEOFApart: data read together with io.EOF or another error comes
// first, alone, and the error on the next Read; other reads pass through.
func TestEOFApart(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    io.Reader
		want []string // each Read's data, then "EOF" or the error
	}{
		{"data with EOF", iotest.DataErrReader(strings.NewReader("line1\n")), []string{"line1\n", "EOF"}},
		{"EOF alone", strings.NewReader("line1\n"), []string{"line1\n", "EOF"}},
		{"empty", strings.NewReader(""), []string{"EOF"}},
		{"error alone", iotest.TimeoutReader(strings.NewReader("a")), []string{"a", "timeout"}},
		{"data with an error", errWithData{"tail"}, []string{"tail", "reset"}},
	} {
		r := &eofApart{ReadCloser: io.NopCloser(tc.r)}
		var got []string
		for range 4 {
			buf := make([]byte, 16)
			n, err := r.Read(buf)
			if n > 0 {
				got = append(got, string(buf[:n]))
				if err != nil {
					t.Errorf("%s: data returned with %v", tc.name, err)
				}
			}
			if err != nil {
				got = append(got, err.Error())
				break
			}
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: reads %q, want %q", tc.name, got, tc.want)
		}
	}
}

// errWithData returns its data and an error on its one Read.
type errWithData struct{ data string }

func (e errWithData) Read(p []byte) (int, error) {
	return copy(p, e.data), errors.New("reset")
}
