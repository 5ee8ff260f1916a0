package fake

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/skiffnode/skiff/runtime"
)

// TestStreamer checks the fake's streaming URLs, recorded calls and errors.
func TestStreamer(t *testing.T) {
	ctx := context.Background()
	r := New(time.Now)
	sb, err := r.RunSandbox(ctx, &runtime.SandboxSpec{Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.CreateContainer(ctx, sb, &runtime.ContainerSpec{Name: "app"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Exec(ctx, id, []string{"sh"}, false, false, true, false); err == nil {
		t.Error("Exec in a created container: no error")
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() (string, error){
		StreamBase + "/exec/" + id:        func() (string, error) { return r.Exec(ctx, id, []string{"sh", "-c", "ls"}, true, true, true, false) },
		StreamBase + "/attach/" + id:      func() (string, error) { return r.Attach(ctx, id, false, false, true, true) },
		StreamBase + "/portforward/" + sb: func() (string, error) { return r.PortForward(ctx, sb, []int32{80}) },
	} {
		if got, err := call(); got != name || err != nil {
			t.Errorf("URL = %q, %v; want %q", got, err, name)
		}
	}
	for _, want := range []string{"Exec app sh -c ls", "Attach app", "PortForward web"} {
		if !slices.Contains(r.Calls(), want) {
			t.Errorf("calls %q lack %q", r.Calls(), want)
		}
	}
	if _, err := r.Attach(ctx, "nope", false, false, true, false); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Attach(unknown) err = %v, want ErrNotFound", err)
	}
	if err := r.StopSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PortForward(ctx, sb, nil); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("PortForward(stopped sandbox) err = %v, want ErrNotFound", err)
	}
}
