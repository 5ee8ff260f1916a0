package podlogs

import (
	"errors"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	ts := time.Date(2024, 5, 1, 10, 0, 0, 123456789, time.UTC)
	tests := []struct {
		name    string
		line    string
		want    Entry
		wantErr bool
	}{
		{name: "full stdout", line: "2024-05-01T10:00:00.123456789Z stdout F hello world\n",
			want: Entry{Time: ts, Stream: Stdout, Content: []byte("hello world")}},
		{name: "partial stderr", line: "2024-05-01T10:00:00.123456789Z stderr P part",
			want: Entry{Time: ts, Stream: Stderr, Partial: true, Content: []byte("part")}},
		{name: "content keeps inner spaces", line: "2024-05-01T10:00:00.123456789Z stdout F  a  b ",
			want: Entry{Time: ts, Stream: Stdout, Content: []byte(" a  b ")}},
		{name: "empty content", line: "2024-05-01T10:00:00.123456789Z stdout F \n",
			want: Entry{Time: ts, Stream: Stdout, Content: []byte{}}},
		{name: "empty content without separator", line: "2024-05-01T10:00:00.123456789Z stdout F",
			want: Entry{Time: ts, Stream: Stdout}},
		{name: "extra tags are ignored", line: "2024-05-01T10:00:00.123456789Z stdout P:x:y z",
			want: Entry{Time: ts, Stream: Stdout, Partial: true, Content: []byte("z")}},
		{name: "time zone offset", line: "2024-05-01T12:00:00.123456789+02:00 stdout F x",
			want: Entry{Time: ts, Stream: Stdout, Content: []byte("x")}},
		{name: "no separators", line: "garbage", wantErr: true},
		{name: "bad time", line: "yesterday stdout F x", wantErr: true},
		{name: "bad stream", line: "2024-05-01T10:00:00Z stdin F x", wantErr: true},
		{name: "missing tag", line: "2024-05-01T10:00:00Z stdout", wantErr: true},
		{name: "empty tag", line: "2024-05-01T10:00:00Z stdout  x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLine([]byte(tt.line))
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidLine) {
					t.Fatalf("ParseLine(%q) error = %v, want ErrInvalidLine", tt.line, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLine(%q): %v", tt.line, err)
			}
			if !got.Time.Equal(tt.want.Time) || got.Stream != tt.want.Stream ||
				got.Partial != tt.want.Partial || string(got.Content) != string(tt.want.Content) {
				t.Errorf("ParseLine(%q) = %+v (content %q), want %+v (content %q)",
					tt.line, got, got.Content, tt.want, tt.want.Content)
			}
		})
	}
}
