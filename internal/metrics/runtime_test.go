package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/runtime"
)

// stubRuntime is a runtime.Runtime (and runtime.Streamer) whose every
// call takes took on clk and returns err.
type stubRuntime struct {
	clk  *clocktesting.FakeClock
	took time.Duration
	err  error
	// calls counts the calls that reached it.
	calls int
}

func (s *stubRuntime) do() error {
	s.calls++
	s.clk.Step(s.took)
	return s.err
}

func (s *stubRuntime) Version(context.Context) (runtime.VersionInfo, error) {
	return runtime.VersionInfo{}, s.do()
}

func (s *stubRuntime) Features(context.Context) (runtime.Features, error) {
	return runtime.Features{}, s.do()
}

func (s *stubRuntime) RunSandbox(context.Context, *runtime.SandboxSpec) (string, error) {
	return "", s.do()
}
func (s *stubRuntime) StopSandbox(context.Context, string) error   { return s.do() }
func (s *stubRuntime) RemoveSandbox(context.Context, string) error { return s.do() }
func (s *stubRuntime) SandboxStatus(context.Context, string) (*runtime.SandboxStatus, error) {
	return nil, s.do()
}

func (s *stubRuntime) ListSandboxes(context.Context, map[string]string) ([]*runtime.Sandbox, error) {
	return nil, s.do()
}

func (s *stubRuntime) CreateContainer(context.Context, string, *runtime.ContainerSpec, *runtime.SandboxSpec) (string, error) {
	return "", s.do()
}
func (s *stubRuntime) StartContainer(context.Context, string) error { return s.do() }
func (s *stubRuntime) StopContainer(context.Context, string, time.Duration) error {
	return s.do()
}
func (s *stubRuntime) RemoveContainer(context.Context, string) error { return s.do() }
func (s *stubRuntime) ListContainers(context.Context, runtime.ContainerFilter) ([]*runtime.Container, error) {
	return nil, s.do()
}

func (s *stubRuntime) ContainerStatus(context.Context, string) (*runtime.ContainerStatus, error) {
	return nil, s.do()
}

func (s *stubRuntime) ExecSync(context.Context, string, []string, time.Duration) (*runtime.ExecResult, error) {
	return nil, s.do()
}
func (s *stubRuntime) ReopenContainerLog(context.Context, string) error { return s.do() }
func (s *stubRuntime) UpdateContainerResources(context.Context, string, *runtime.Resources) error {
	return s.do()
}
func (s *stubRuntime) ImageStatus(context.Context, string) (*runtime.Image, error) {
	return nil, s.do()
}

func (s *stubRuntime) PullImage(context.Context, string, *runtime.AuthConfig) (string, error) {
	return "", s.do()
}
func (s *stubRuntime) ListImages(context.Context) ([]*runtime.Image, error) { return nil, s.do() }
func (s *stubRuntime) RemoveImage(context.Context, string) error            { return s.do() }
func (s *stubRuntime) ImageFsInfo(context.Context) ([]runtime.FilesystemUsage, error) {
	return nil, s.do()
}

func (s *stubRuntime) Exec(context.Context, string, []string, bool, bool, bool, bool) (string, error) {
	return "", s.do()
}

func (s *stubRuntime) Attach(context.Context, string, bool, bool, bool, bool) (string, error) {
	return "", s.do()
}

func (s *stubRuntime) PortForward(context.Context, string, []int32) (string, error) {
	return "", s.do()
}

// TestInstrumentRuntimeCountsOperations calls every operation once
// successfully and once failing, and checks its operation_type's total,
// errors and duration.
func TestInstrumentRuntimeCountsOperations(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		op   string
		call func(runtime.Runtime) error
	}{
		{"version", func(r runtime.Runtime) error { _, err := r.Version(ctx); return err }},
		{"run_podsandbox", func(r runtime.Runtime) error { _, err := r.RunSandbox(ctx, &runtime.SandboxSpec{}); return err }},
		{"stop_podsandbox", func(r runtime.Runtime) error { return r.StopSandbox(ctx, "s") }},
		{"remove_podsandbox", func(r runtime.Runtime) error { return r.RemoveSandbox(ctx, "s") }},
		{"podsandbox_status", func(r runtime.Runtime) error { _, err := r.SandboxStatus(ctx, "s"); return err }},
		{"list_podsandbox", func(r runtime.Runtime) error { _, err := r.ListSandboxes(ctx, nil); return err }},
		{"list_podsandbox", func(r runtime.Runtime) error {
			_, err := runtime.ListSandboxRefs(ctx, r, nil, "k", nil)
			return err
		}},
		{"create_container", func(r runtime.Runtime) error {
			_, err := r.CreateContainer(ctx, "s", &runtime.ContainerSpec{}, &runtime.SandboxSpec{})
			return err
		}},
		{"start_container", func(r runtime.Runtime) error { return r.StartContainer(ctx, "c") }},
		{"stop_container", func(r runtime.Runtime) error { return r.StopContainer(ctx, "c", time.Second) }},
		{"remove_container", func(r runtime.Runtime) error { return r.RemoveContainer(ctx, "c") }},
		{"list_containers", func(r runtime.Runtime) error { _, err := r.ListContainers(ctx, runtime.ContainerFilter{}); return err }},
		{"list_containers", func(r runtime.Runtime) error {
			_, err := runtime.ListContainerRefs(ctx, r, nil, "k", nil)
			return err
		}},
		{"container_status", func(r runtime.Runtime) error { _, err := r.ContainerStatus(ctx, "c"); return err }},
		{"exec_sync", func(r runtime.Runtime) error { _, err := r.ExecSync(ctx, "c", []string{"true"}, 0); return err }},
		{"reopen_container_log", func(r runtime.Runtime) error { return r.ReopenContainerLog(ctx, "c") }},
		{"update_container", func(r runtime.Runtime) error { return r.UpdateContainerResources(ctx, "c", &runtime.Resources{}) }},
		{"image_status", func(r runtime.Runtime) error { _, err := r.ImageStatus(ctx, "img"); return err }},
		{"pull_image", func(r runtime.Runtime) error { _, err := r.PullImage(ctx, "img", nil); return err }},
		{"list_images", func(r runtime.Runtime) error { _, err := r.ListImages(ctx); return err }},
		{"remove_image", func(r runtime.Runtime) error { return r.RemoveImage(ctx, "img") }},
		{"image_fs_info", func(r runtime.Runtime) error { _, err := r.ImageFsInfo(ctx); return err }},
		{"exec", func(r runtime.Runtime) error {
			_, err := r.(runtime.Streamer).Exec(ctx, "c", nil, false, false, true, true)
			return err
		}},
		{"attach", func(r runtime.Runtime) error {
			_, err := r.(runtime.Streamer).Attach(ctx, "c", false, false, true, true)
			return err
		}},
		{"port_forward", func(r runtime.Runtime) error { _, err := r.(runtime.Streamer).PortForward(ctx, "s", nil); return err }},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%d_%s", i, tt.op), func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			k, reg := newTestKubelet(t, Options{Clock: clk, NoProcessCollectors: true})
			stub := &stubRuntime{clk: clk, took: 250 * time.Millisecond}
			rt := k.InstrumentRuntime(stub)
			boom := errors.New("boom")
			if err := tt.call(rt); err != nil {
				t.Fatalf("call: %v", err)
			}
			stub.err = boom
			if err := tt.call(rt); !errors.Is(err, boom) {
				t.Fatalf("failing call returned %v, want the runtime's error", err)
			}
			if stub.calls != 2 {
				t.Errorf("runtime called %d times, want 2", stub.calls)
			}
			labels := map[string]string{"operation_type": tt.op}
			if got := sample(t, reg, "kubelet_runtime_operations_total", labels).GetCounter().GetValue(); got != 2 {
				t.Errorf("total = %v, want 2", got)
			}
			if got := sample(t, reg, "kubelet_runtime_operations_errors_total", labels).GetCounter().GetValue(); got != 1 {
				t.Errorf("errors = %v, want 1", got)
			}
			h := sample(t, reg, "kubelet_runtime_operations_duration_seconds", labels).GetHistogram()
			if h.GetSampleCount() != 2 || h.GetSampleSum() != 0.5 {
				t.Errorf("duration: %d samples, sum %v; want 2, 0.5", h.GetSampleCount(), h.GetSampleSum())
			}
		})
	}
}

// TestInstrumentRuntimeImageNotFoundIsNoError: an absent image is CRI's
// empty ImageStatus, no error; the caller still gets ErrNotFound.
func TestInstrumentRuntimeImageNotFoundIsNoError(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	k, reg := newTestKubelet(t, Options{Clock: clk, NoProcessCollectors: true})
	rt := k.InstrumentRuntime(&stubRuntime{clk: clk, err: fmt.Errorf("image img: %w", runtime.ErrNotFound)})
	if _, err := rt.ImageStatus(context.Background(), "img"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("ImageStatus = %v, want ErrNotFound", err)
	}
	labels := map[string]string{"operation_type": "image_status"}
	total := sample(t, reg, "kubelet_runtime_operations_total", labels).GetCounter().GetValue()
	errs := sample(t, reg, "kubelet_runtime_operations_errors_total", labels).GetCounter().GetValue()
	if total != 1 || errs != 0 {
		t.Errorf("image_status total %v errors %v, want 1 and 0", total, errs)
	}
}

// onlyRuntime hides everything of a runtime but runtime.Runtime.
type onlyRuntime struct{ runtime.Runtime }

// refLister is a runtime with cheap ref listings of its own.
type refLister struct {
	*stubRuntime
	refCalls int
}

func (r *refLister) ListContainerRefs(_ context.Context, _ map[string]string, _ string, into []runtime.ContainerRef) ([]runtime.ContainerRef, error) {
	r.refCalls++
	return into[:0], nil
}

func (r *refLister) ListSandboxRefs(_ context.Context, _ map[string]string, _ string, into []runtime.SandboxRef) ([]runtime.SandboxRef, error) {
	r.refCalls++
	return into[:0], nil
}

// TestInstrumentRuntimeKeepsOptionalInterfaces: a Streamer stays one, a
// plain runtime does not become one, and a RefLister's own listings are
// used.
func TestInstrumentRuntimeKeepsOptionalInterfaces(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	k, _ := newTestKubelet(t, Options{Clock: clk, NoProcessCollectors: true})
	stub := &stubRuntime{clk: clk}
	if _, ok := k.InstrumentRuntime(stub).(runtime.Streamer); !ok {
		t.Error("a Streamer's decorator is no Streamer")
	}
	if _, ok := k.InstrumentRuntime(onlyRuntime{stub}).(runtime.Streamer); ok {
		t.Error("a plain runtime's decorator is a Streamer")
	}
	rl := &refLister{stubRuntime: stub}
	rt := k.InstrumentRuntime(rl)
	if _, err := runtime.ListContainerRefs(context.Background(), rt, nil, "k", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.ListSandboxRefs(context.Background(), rt, nil, "k", nil); err != nil {
		t.Fatal(err)
	}
	if rl.refCalls != 2 || stub.calls != 0 {
		t.Errorf("ref listings: %d RefLister calls, %d full listings; want 2 and 0", rl.refCalls, stub.calls)
	}
}
