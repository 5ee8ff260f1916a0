package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

func TestHangHookParsing(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := fake.New(time.Now)
	for _, tt := range []struct {
		env      string
		wantErr  bool
		wantWrap bool
	}{
		{"", false, false},
		{"after:10s", false, true},
		{"after:0s", false, true},
		{"10s", true, false},
		{"after:soon", true, false},
		{"after:-1s", true, false},
	} {
		t.Setenv(hangSyncEnv, tt.env)
		got, err := withHangHook(rt, log)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s=%q: err %v, want error %v", hangSyncEnv, tt.env, err, tt.wantErr)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), hangSyncEnv) {
			t.Errorf("%s=%q: error %q does not name the variable", hangSyncEnv, tt.env, err)
		}
		if _, wrapped := got.(*hangingRuntime); err == nil && wrapped != tt.wantWrap {
			t.Errorf("%s=%q: wrapped %v, want %v", hangSyncEnv, tt.env, wrapped, tt.wantWrap)
		}
	}
}

// Once due, the hook's relist listing hangs past any deadline of its own
// until the agent's context ends; before, it lists.
func TestHangHookHangsTheRelist(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &hangingRuntime{Runtime: fake.New(time.Now), at: time.Now().Add(time.Hour), log: log}
	if _, err := runtime.ListSandboxRefs(context.Background(), h, nil, "k", nil); err != nil {
		t.Fatalf("before the hang: %v", err)
	}
	h.at = time.Now().Add(-time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := runtime.ListSandboxRefs(ctx, h, nil, "k", nil)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the listing returned (%v) instead of hanging", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("after the agent stopped: %v, want context.Canceled", err)
	}
}
