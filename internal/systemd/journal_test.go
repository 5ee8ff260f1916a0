package systemd

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
)

// Under journald: no time, the level's syslog priority as "<N>", the rest
// as slog's text format, one line per record; WithAttrs and WithGroup
// reach every level.
func TestJournalHandlerFormat(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(JournalHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})).With("component", "agent")
	log.Debug("d", "k", 1)
	log.Info("started", "node", "n1")
	log.Warn("relist failed", "err", "multi\nline")
	log.Error("boom")
	log.Log(context.Background(), slog.LevelError+4, "worse")
	log.WithGroup("g").Info("grouped", "a", "b")
	want := []string{
		`<7>level=DEBUG msg=d component=agent k=1`,
		`<6>level=INFO msg=started component=agent node=n1`,
		`<4>level=WARN msg="relist failed" component=agent err="multi\nline"`,
		`<3>level=ERROR msg=boom component=agent`,
		`<3>level=ERROR+4 msg=worse component=agent`,
		`<6>level=INFO msg=grouped component=agent g.a=b`,
	}
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("journal lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestJournalHandlerLevel(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(JournalHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	log.Debug("hidden")
	log.Info("shown")
	if got := buf.String(); got != "<6>level=INFO msg=shown\n" {
		t.Errorf("output %q, want only the info line", got)
	}
}

// StderrIsJournal follows go-systemd's check: JOURNAL_STREAM must name
// stderr's device and inode.
func TestStderrIsJournal(t *testing.T) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(os.Stderr.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		env  string
		want bool
	}{
		{"", false},
		{fmt.Sprintf("%d:%d", st.Dev, st.Ino), true},
		{fmt.Sprintf("%d:%d", st.Dev, st.Ino+1), false}, // stderr redirected elsewhere
		{"garbage", false},
	} {
		t.Setenv("JOURNAL_STREAM", tt.env)
		if got := StderrIsJournal(); got != tt.want {
			t.Errorf("JOURNAL_STREAM=%q: StderrIsJournal %v, want %v", tt.env, got, tt.want)
		}
	}
}
