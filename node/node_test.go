package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
)

func testNode() *Node {
	return &Node{log: slog.New(slog.NewTextHandler(io.Discard, nil)), ag: &agentPhase{}}
}

// Close releases in reverse order of acquisition, once.
func TestCloseReleasesInReverse(t *testing.T) {
	n := testNode()
	var got []string
	for _, name := range []string{"control plane", "runtime", "puller", "prober"} {
		n.onClose(func() { got = append(got, name) })
	}
	n.Close()
	n.Close()
	if want := []string{"prober", "puller", "runtime", "control plane"}; !slices.Equal(got, want) {
		t.Errorf("released %v, want %v", got, want)
	}
}

// Run runs every loop; the first to fail stops the others, and Run
// returns its error after all of them returned. Loops lists them in order.
func TestRunStopsOnFirstFailure(t *testing.T) {
	n := testNode()
	stopped := make(chan string, 2)
	for _, name := range []string{"a", "b"} {
		n.loopNoErr(name, func(ctx context.Context) { <-ctx.Done(); stopped <- name })
	}
	boom := errors.New("boom")
	n.loop("failing", func(context.Context) error { return boom })
	if got, want := n.Loops(), []string{"a", "b", "failing"}; !slices.Equal(got, want) {
		t.Errorf("Loops() = %v, want %v", got, want)
	}
	if err := n.Run(t.Context()); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want %v", err, boom)
	}
	if len(stopped) != 2 {
		t.Errorf("%d loops stopped before Run returned, want 2", len(stopped))
	}
}

// When ctx ends, Run returns nil once every loop returned, whatever the
// loops return on the way out.
func TestRunEndsWithContext(t *testing.T) {
	n := testNode()
	ctx, cancel := context.WithCancel(t.Context())
	n.loop("server", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	cancel()
	if err := n.Run(ctx); err != nil {
		t.Errorf("Run = %v, want nil after the context ended", err)
	}
}
