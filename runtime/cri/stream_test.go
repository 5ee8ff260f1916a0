package cri

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// TestStreamingRequests checks the CRI requests behind exec, attach and
// port-forward (H.25) and that their URLs are passed through.
func TestStreamingRequests(t *testing.T) {
	const url = "http://127.0.0.1:4242/exec/token"
	tests := []struct {
		name string
		call func(r *Runtime) (string, error)
		sent func(f *fakeCRI) proto.Message
		want proto.Message
	}{
		{
			name: "exec with tty and stdin",
			call: func(r *Runtime) (string, error) {
				return r.Exec(context.Background(), "c1", []string{"sh", "-c", "echo hi"}, true, true, true, false)
			},
			sent: func(f *fakeCRI) proto.Message { return f.lastStream },
			want: &runtimeapi.ExecRequest{ContainerId: "c1", Cmd: []string{"sh", "-c", "echo hi"}, Tty: true, Stdin: true, Stdout: true},
		},
		{
			name: "exec without tty",
			call: func(r *Runtime) (string, error) {
				return r.Exec(context.Background(), "c1", []string{"ls"}, false, false, true, true)
			},
			sent: func(f *fakeCRI) proto.Message { return f.lastStream },
			want: &runtimeapi.ExecRequest{ContainerId: "c1", Cmd: []string{"ls"}, Stdout: true, Stderr: true},
		},
		{
			name: "attach",
			call: func(r *Runtime) (string, error) {
				return r.Attach(context.Background(), "c1", false, true, true, true)
			},
			sent: func(f *fakeCRI) proto.Message { return f.lastAttach },
			want: &runtimeapi.AttachRequest{ContainerId: "c1", Stdin: true, Stdout: true, Stderr: true},
		},
		{
			name: "port-forward",
			call: func(r *Runtime) (string, error) {
				return r.PortForward(context.Background(), "sb1", []int32{80, 8080})
			},
			sent: func(f *fakeCRI) proto.Message { return f.lastForward },
			want: &runtimeapi.PortForwardRequest{PodSandboxId: "sb1", Port: []int32{80, 8080}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCRI()
			f.containers["c1"] = &runtimeapi.ContainerStatus{Id: "c1"}
			f.sandboxes["sb1"] = &runtimeapi.PodSandboxStatus{Id: "sb1"}
			f.streamURL = url
			r := newTestRuntime(t, f, time.Second)
			got, err := tt.call(r)
			if err != nil || got != url {
				t.Fatalf("URL = %q, %v; want %q", got, err, url)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if sent := tt.sent(f); !proto.Equal(sent, tt.want) {
				t.Errorf("request = %v, want %v", sent, tt.want)
			}
		})
	}
}

// TestStreamingErrors checks that an unknown container or sandbox wraps
// runtime.ErrNotFound and that an empty URL is an error.
func TestStreamingErrors(t *testing.T) {
	f := newFakeCRI()
	f.containers["c1"] = &runtimeapi.ContainerStatus{Id: "c1"}
	r := newTestRuntime(t, f, time.Second)
	ctx := context.Background()
	calls := map[string]func() (string, error){
		"exec":         func() (string, error) { return r.Exec(ctx, "nope", []string{"ls"}, false, false, true, false) },
		"attach":       func() (string, error) { return r.Attach(ctx, "nope", false, false, true, false) },
		"port-forward": func() (string, error) { return r.PortForward(ctx, "nope", nil) },
	}
	for name, call := range calls {
		if _, err := call(); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("%s on unknown object: err = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := r.Exec(ctx, "c1", []string{"ls"}, false, false, true, false); err == nil || !strings.Contains(err.Error(), "no streaming URL") {
		t.Errorf("exec with empty URL: err = %v, want no streaming URL", err)
	}
}
