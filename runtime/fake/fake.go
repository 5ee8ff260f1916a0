// Package fake is an in-memory runtime.Runtime for unit tests of packages
// that drive the runtime port. Containers never run on their own: tests move
// them with Exit; StartContainer makes a container Running at once.
package fake

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/skiffnode/skiff/runtime"
)

var (
	_ runtime.Runtime     = (*Runtime)(nil)
	_ runtime.ExitWatcher = (*Runtime)(nil)
)

// Runtime is a fake runtime. The zero value is not usable; call New.
// Safe for concurrent use.
type Runtime struct {
	mu         sync.Mutex
	now        func() time.Time
	seq        int
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]*runtime.Image
	calls      []string
	// Errors injects a failure into the named operation ("StartContainer").
	errs map[string]error
	// PodIP is given to every non-host-network sandbox.
	PodIP string
	// listings counts ListSandboxes calls (each relist and pod sync lists).
	listings int
	// stopTimeouts is the last StopContainer timeout per container name.
	stopTimeouts map[string]time.Duration
	// execFn, if set, answers ExecSync.
	execFn func(name string, cmd []string) (*runtime.ExecResult, error)
	// exitFns receive Exit's reports (see WatchExits).
	exitFns []func(id string)
	// features is what Features reports (SetFeatures).
	features runtime.Features
}

// SetFeatures sets what Features reports (default: none).
func (r *Runtime) SetFeatures(f runtime.Features) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.features = f
}

// Features implements runtime.Runtime.
func (r *Runtime) Features(context.Context) (runtime.Features, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.features, nil
}

// SetExec makes ExecSync answer with fn, given the container name and
// command (called without the fake's lock held).
func (r *Runtime) SetExec(fn func(name string, cmd []string) (*runtime.ExecResult, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.execFn = fn
}

type sandbox struct {
	st   runtime.SandboxStatus
	spec runtime.SandboxSpec
}

type container struct {
	st   runtime.ContainerStatus
	spec runtime.ContainerSpec
}

// New returns an empty fake runtime whose timestamps come from now.
func New(now func() time.Time) *Runtime {
	return &Runtime{
		now:          now,
		sandboxes:    map[string]*sandbox{},
		containers:   map[string]*container{},
		images:       map[string]*runtime.Image{},
		errs:         map[string]error{},
		stopTimeouts: map[string]time.Duration{},
		PodIP:        "10.88.0.2",
	}
}

// AddImage makes ref present.
func (r *Runtime) AddImage(ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[ref] = &runtime.Image{ID: "sha256:" + ref, RepoTags: []string{ref}}
}

// FailNext makes the next call of op return err.
func (r *Runtime) FailNext(op string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[op] = err
}

// Calls returns the operations called so far, e.g. "StartContainer app".
func (r *Runtime) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// Listings is how many times ListSandboxes was called: a test that checks
// that nothing happens waits for listings (relists, pod syncs) rather
// than for wall-clock time.
func (r *Runtime) Listings() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listings
}

// Exit makes a running container exit with code, and reports the exit to
// the WatchExits callers.
func (r *Runtime) Exit(id string, code int32) {
	r.mu.Lock()
	c, ok := r.containers[id]
	ok = ok && c.st.State == runtime.ContainerRunning
	if ok {
		r.exitLocked(c, code, "")
	}
	fns := r.exitFns
	r.mu.Unlock()
	if ok {
		for _, fn := range fns {
			fn(id)
		}
	}
}

// WatchExits implements runtime.ExitWatcher: fn hears of every Exit until
// ctx is done.
func (r *Runtime) WatchExits(ctx context.Context, fn func(id string)) error {
	r.mu.Lock()
	r.exitFns = append(r.exitFns, fn)
	r.mu.Unlock()
	<-ctx.Done()
	return nil
}

// KillSandbox makes a sandbox NotReady, as if its pause process died.
func (r *Runtime) KillSandbox(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sandboxes[id]; ok {
		s.st.State = runtime.SandboxNotReady
	}
}

// ContainerByName returns the newest container of that name in the pod uid.
func (r *Runtime) ContainerByName(uid, name string) (runtime.ContainerStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best *container
	for _, c := range r.containers {
		if c.st.Name != name || r.sandboxes[c.st.SandboxID] == nil || r.sandboxes[c.st.SandboxID].st.UID != uid {
			continue
		}
		if best == nil || c.st.Attempt > best.st.Attempt || (c.st.Attempt == best.st.Attempt && c.st.CreatedAt.After(best.st.CreatedAt)) {
			best = c
		}
	}
	if best == nil {
		return runtime.ContainerStatus{}, false
	}
	return best.st, true
}

// SandboxSpecOf returns the spec of the newest sandbox of the pod uid.
func (r *Runtime) SandboxSpecOf(uid string) (runtime.SandboxSpec, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best *sandbox
	for _, sb := range r.sandboxes {
		if sb.st.UID == uid && (best == nil || sb.st.Attempt > best.st.Attempt) {
			best = sb
		}
	}
	if best == nil {
		return runtime.SandboxSpec{}, false
	}
	return best.spec, true
}

// ContainerSpecOf returns the spec a container was created with.
func (r *Runtime) ContainerSpecOf(id string) (runtime.ContainerSpec, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return runtime.ContainerSpec{}, false
	}
	return c.spec, true
}

func (r *Runtime) exitLocked(c *container, code int32, reason string) {
	c.st.State = runtime.ContainerExited
	c.st.ExitCode = code
	c.st.FinishedAt = r.now()
	if reason == "" {
		reason = "Completed"
		if code != 0 {
			reason = "Error"
		}
	}
	c.st.Reason = reason
}

func (r *Runtime) call(op, arg string) error {
	r.calls = append(r.calls, op+" "+arg)
	if err, ok := r.errs[op]; ok {
		delete(r.errs, op)
		return err
	}
	return nil
}

func (r *Runtime) nextID(prefix string) string {
	r.seq++
	return fmt.Sprintf("%s%04d", prefix, r.seq)
}

// Version implements runtime.Runtime.
func (r *Runtime) Version(context.Context) (runtime.VersionInfo, error) {
	return runtime.VersionInfo{Name: "fake", Version: "0.0", APIVersion: "v1"}, nil
}

// RunSandbox implements runtime.Runtime.
func (r *Runtime) RunSandbox(_ context.Context, spec *runtime.SandboxSpec) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("RunSandbox", spec.Name); err != nil {
		return "", err
	}
	id := r.nextID("sb")
	ip := r.PodIP
	if spec.HostNetwork {
		ip = ""
	}
	r.sandboxes[id] = &sandbox{spec: *spec, st: runtime.SandboxStatus{
		Sandbox: runtime.Sandbox{
			ID: id, Name: spec.Name, Namespace: spec.Namespace, UID: spec.UID, Attempt: spec.Attempt,
			State: runtime.SandboxReady, CreatedAt: r.now(),
			Labels: maps.Clone(spec.Labels), Annotations: maps.Clone(spec.Annotations),
		},
		IP: ip, HostNetwork: spec.HostNetwork,
	}}
	return id, nil
}

// StopSandbox implements runtime.Runtime.
func (r *Runtime) StopSandbox(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("StopSandbox", id); err != nil {
		return err
	}
	s, ok := r.sandboxes[id]
	if !ok {
		return nil
	}
	s.st.State = runtime.SandboxNotReady
	for _, c := range r.containers {
		if c.st.SandboxID == id && c.st.State == runtime.ContainerRunning {
			r.exitLocked(c, 137, "Error")
		}
	}
	return nil
}

// RemoveSandbox implements runtime.Runtime.
func (r *Runtime) RemoveSandbox(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("RemoveSandbox", id); err != nil {
		return err
	}
	delete(r.sandboxes, id)
	for cid, c := range r.containers {
		if c.st.SandboxID == id {
			delete(r.containers, cid)
		}
	}
	return nil
}

// SandboxStatus implements runtime.Runtime.
func (r *Runtime) SandboxStatus(_ context.Context, id string) (*runtime.SandboxStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("sandbox %s: %w", id, runtime.ErrNotFound)
	}
	st := s.st
	return &st, nil
}

// ListSandboxes implements runtime.Runtime.
func (r *Runtime) ListSandboxes(_ context.Context, labels map[string]string) ([]*runtime.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listings++
	var out []*runtime.Sandbox
	for _, s := range r.sandboxes {
		if matches(s.st.Labels, labels) {
			sb := s.st.Sandbox
			out = append(out, &sb)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// CreateContainer implements runtime.Runtime.
func (r *Runtime) CreateContainer(_ context.Context, sandboxID string, spec *runtime.ContainerSpec, _ *runtime.SandboxSpec) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("CreateContainer", spec.Name); err != nil {
		return "", err
	}
	s, ok := r.sandboxes[sandboxID]
	if !ok || s.st.State != runtime.SandboxReady {
		return "", fmt.Errorf("sandbox %s not ready: %w", sandboxID, runtime.ErrNotFound)
	}
	id := r.nextID("c")
	r.containers[id] = &container{spec: *spec, st: runtime.ContainerStatus{
		Container: runtime.Container{
			ID: id, SandboxID: sandboxID, Name: spec.Name, Attempt: spec.Attempt,
			Image: spec.Image, ImageRef: "sha256:" + spec.Image, State: runtime.ContainerCreated,
			CreatedAt: r.now(), Labels: maps.Clone(spec.Labels), Annotations: maps.Clone(spec.Annotations),
		},
		LogPath: s.spec.LogDirectory + "/" + spec.LogPath,
	}}
	return id, nil
}

// StartContainer implements runtime.Runtime.
func (r *Runtime) StartContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("StartContainer", r.nameOf(id)); err != nil {
		return err
	}
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	c.st.State = runtime.ContainerRunning
	c.st.StartedAt = r.now()
	return nil
}

func (r *Runtime) nameOf(id string) string {
	if c, ok := r.containers[id]; ok {
		return c.st.Name
	}
	return id
}

// StopContainer implements runtime.Runtime: running containers exit 137 at once.
func (r *Runtime) StopContainer(_ context.Context, id string, timeout time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("StopContainer", r.nameOf(id)); err != nil {
		return err
	}
	r.stopTimeouts[r.nameOf(id)] = timeout
	if c, ok := r.containers[id]; ok && c.st.State == runtime.ContainerRunning {
		r.exitLocked(c, 137, "Error")
	}
	return nil
}

// StopTimeout is the timeout the last StopContainer of the container
// named name was given, and whether there was one.
func (r *Runtime) StopTimeout(name string) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.stopTimeouts[name]
	return d, ok
}

// RemoveContainer implements runtime.Runtime.
func (r *Runtime) RemoveContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("RemoveContainer", r.nameOf(id)); err != nil {
		return err
	}
	delete(r.containers, id)
	return nil
}

// ListContainers implements runtime.Runtime.
func (r *Runtime) ListContainers(_ context.Context, f runtime.ContainerFilter) ([]*runtime.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtime.Container
	for _, c := range r.containers {
		if f.SandboxID != "" && c.st.SandboxID != f.SandboxID {
			continue
		}
		if f.State != nil && c.st.State != *f.State {
			continue
		}
		if !matches(c.st.Labels, f.Labels) {
			continue
		}
		ct := c.st.Container
		out = append(out, &ct)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ContainerStatus implements runtime.Runtime.
func (r *Runtime) ContainerStatus(_ context.Context, id string) (*runtime.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	st := c.st
	return &st, nil
}

// ExecSync implements runtime.Runtime; without SetExec it succeeds with no
// output.
func (r *Runtime) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) (*runtime.ExecResult, error) {
	r.mu.Lock()
	name := r.nameOf(id)
	err := r.call("ExecSync", name)
	fn := r.execFn
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if fn != nil {
		return fn(name, cmd)
	}
	return &runtime.ExecResult{}, nil
}

// ImageStatus implements runtime.Runtime.
func (r *Runtime) ImageStatus(_ context.Context, ref string) (*runtime.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	img, ok := r.images[ref]
	if !ok {
		return nil, fmt.Errorf("image %s: %w", ref, runtime.ErrNotFound)
	}
	cp := *img
	return &cp, nil
}

// PullImage implements runtime.Runtime: it fails unless FailNext is unset
// and makes the image present.
func (r *Runtime) PullImage(_ context.Context, ref string, _ *runtime.AuthConfig) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("PullImage", ref); err != nil {
		return "", err
	}
	r.images[ref] = &runtime.Image{ID: "sha256:" + ref, RepoTags: []string{ref}}
	return "sha256:" + ref, nil
}

// ListImages implements runtime.Runtime.
func (r *Runtime) ListImages(context.Context) ([]*runtime.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtime.Image
	for _, img := range r.images {
		cp := *img
		out = append(out, &cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ImageFsInfo implements runtime.Runtime: the images' sizes on "/".
func (r *Runtime) ImageFsInfo(context.Context) ([]runtime.FilesystemUsage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("ImageFsInfo", ""); err != nil {
		return nil, err
	}
	var used uint64
	for _, img := range r.images {
		used += img.Size
	}
	return []runtime.FilesystemUsage{{Mountpoint: "/", UsedBytes: used}}, nil
}

// ReopenContainerLog implements runtime.Runtime.
func (r *Runtime) ReopenContainerLog(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.call("ReopenContainerLog", r.nameOf(id))
}

// UpdateContainerResources implements runtime.Runtime: the container's
// spec (ContainerSpecOf) takes res; it must be running.
func (r *Runtime) UpdateContainerResources(_ context.Context, id string, res *runtime.Resources) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("UpdateContainerResources", r.nameOf(id)); err != nil {
		return err
	}
	c, ok := r.containers[id]
	if !ok || c.st.State != runtime.ContainerRunning {
		return fmt.Errorf("container %s not running: %w", id, runtime.ErrNotFound)
	}
	cp := *res
	c.spec.Resources = &cp
	return nil
}

// RemoveImage implements runtime.Runtime.
func (r *Runtime) RemoveImage(_ context.Context, ref string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.images, ref)
	return nil
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
