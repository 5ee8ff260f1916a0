package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestBackoffNext(t *testing.T) {
	b := NewBackoff(Policy{Initial: time.Second, Max: 30 * time.Second, ResetAfter: time.Minute})
	steps := []struct {
		ran  time.Duration
		want time.Duration
	}{
		{0, time.Second}, // the first delay is the initial one
		{0, 2 * time.Second},
		{5 * time.Second, 4 * time.Second}, // a short run is no stable run
		{0, 8 * time.Second},
		{0, 16 * time.Second},
		{0, 30 * time.Second}, // capped
		{59 * time.Second, 30 * time.Second},
		{time.Minute, time.Second}, // a stable run resets
		{0, 2 * time.Second},
	}
	for i, s := range steps {
		if got := b.Next(s.ran); got != s.want {
			t.Fatalf("step %d: Next(%v) = %v, want %v", i, s.ran, got, s.want)
		}
	}
}

func TestAliveAndLogTail(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("own process not alive")
	}
	if Alive(999999999) {
		t.Error("impossible pid alive")
	}
	path := filepath.Join(t.TempDir(), "log")
	var lines []string
	for i := 0; i < 20; i++ {
		lines = append(lines, "line"+strconv.Itoa(i))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := LogTail(path, 3); got != "line17\nline18\nline19" {
		t.Errorf("LogTail = %q", got)
	}
}
