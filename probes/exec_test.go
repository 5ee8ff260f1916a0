package probes

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

func TestExecProber_B3_ExitCode(t *testing.T) {
	long := strings.Repeat("x", maxOutputLength+100)
	errDown := errors.New("runtime down")
	tests := []struct {
		name    string
		reply   execReply
		want    Result
		wantOut string
		wantErr error
	}{
		{"exit 0 is success", execReply{stdout: "ok"}, Success, "ok", nil},
		{"exit 1 is failure", execReply{exit: 1, stdout: "out,", stderr: "err"}, Failure, "out,err", nil},
		{"exit 137 is failure", execReply{exit: 137}, Failure, "", nil},
		{"output truncated to 10KiB", execReply{stdout: long}, Success, long[:maxOutputLength], nil},
		{
			"timeout as context deadline is failure",
			execReply{err: fmt.Errorf("exec in container c1: %w", context.DeadlineExceeded)},
			Failure, `command "check --now" timed out`, nil,
		},
		{
			"timeout as gRPC DeadlineExceeded is failure",
			execReply{err: fmt.Errorf("exec in container c1: %w", status.Error(codes.DeadlineExceeded, "timeout 1s exceeded"))},
			Failure, `command "check --now" timed out`, nil,
		},
		{"runtime error is unknown", execReply{err: errDown}, Unknown, "", errDown},
		{"missing container is unknown", execReply{err: fmt.Errorf("c1: %w", runtime.ErrNotFound)}, Unknown, "", runtime.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeExec()
			f.set("check", tc.reply)
			res, out, err := ExecProber{Exec: f}.Probe(t.Context(), "c1", []string{"check", "--now"}, time.Second)
			if res != tc.want || out != tc.wantOut {
				t.Errorf("Probe = %v, %.40q; want %v, %.40q", res, out, tc.want, tc.wantOut)
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestExecProber_B3_CancelledIsNotTimeout(t *testing.T) {
	f := newFakeExec()
	f.set("check", execReply{err: context.DeadlineExceeded})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, _, err := ExecProber{Exec: f}.Probe(ctx, "c1", []string{"check"}, time.Second)
	if res != Unknown || err == nil {
		t.Errorf("Probe after cancel = %v, %v; want Unknown with an error", res, err)
	}
}

func TestExpandCommand_B15_StaticEnv(t *testing.T) {
	env := []v1.EnvVar{
		{Name: "PORT", Value: "8080"},
		{Name: "FROM_SECRET", ValueFrom: &v1.EnvVarSource{}},
	}
	tests := []struct{ in, want string }{
		{"$(PORT)", "8080"},
		{"http://localhost:$(PORT)/healthz", "http://localhost:8080/healthz"},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(PORT)", "$(PORT)"},
		{"$$", "$"},
		{"$(PORT", "$(PORT"},
		{"cost $5", "cost $5"},
		{"end$", "end$"},
		{"$(FROM_SECRET)", ""},
		{"$(PORT)$(PORT)", "80808080"},
	}
	for _, tc := range tests {
		got := expandCommand([]string{tc.in}, env)
		if !reflect.DeepEqual(got, []string{tc.want}) {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := expandCommand(nil, env); got != nil {
		t.Errorf("expand(nil) = %q, want nil", got)
	}
}

func TestLimitExecBoundsConcurrentExecs(t *testing.T) {
	if limitExec(nil, 2) != nil {
		t.Error("limitExec(nil) must stay nil")
	}
	f := newFakeExec()
	if limitExec(f, 0) != Execer(f) {
		t.Error("limitExec(e, 0) must be e itself")
	}
	f.block = make(chan struct{})
	l := limitExec(f, 1)
	first := make(chan error, 1)
	go func() {
		_, err := l.ExecSync(context.Background(), "c1", []string{"a"}, time.Second)
		first <- err
	}()
	deadline := time.Now().Add(waitLimit)
	for f.count("a") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first exec never started")
		}
		time.Sleep(time.Millisecond)
	}
	// The only slot is taken: a second exec waits, and gives up with its ctx
	// without ever reaching the runtime.
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := l.ExecSync(ctx, "c2", []string{"b"}, time.Second)
		second <- err
	}()
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Errorf("queued exec: err = %v, want context.Canceled", err)
	}
	if n := f.count("b"); n != 0 {
		t.Errorf("queued exec reached the runtime %d times", n)
	}
	close(f.block)
	if err := <-first; err != nil {
		t.Errorf("first exec: %v", err)
	}
	// The slot is free again.
	if _, err := l.ExecSync(context.Background(), "c3", []string{"c"}, time.Second); err != nil || f.count("c") != 1 {
		t.Errorf("exec after the slot was freed: err %v, count %d", err, f.count("c"))
	}
}
