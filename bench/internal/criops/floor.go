package criops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Container is one container of a floor pod.
type Container struct {
	Name    string
	Image   string
	Command []string
	// CPUShares and MemoryRequest only mirror the kubelet's mapping of
	// requests (shares = milliCPU*1024/1000, no memory limit); 0: unset.
	CPUShares int64
	// Probe, when set on an app container, is made on it from its start
	// until the pod is stopped (see ExecProbe).
	Probe *ExecProbe
	// Mounts names the pod's volumes mounted into this container.
	Mounts []string
}

// Pod is a floor pod: an optional init container run to completion, then
// the app container; Volumes are created on the host before the sandbox.
type Pod struct {
	Name, Namespace, UID string
	Attempt              uint32
	Init                 *Container
	App                  Container
	Volumes              []Volume
}

// Started is a floor pod that is running.
type Started struct {
	Pod       Pod
	SandboxID string
	AppID     string
	Config    *runtimeapi.PodSandboxConfig
	StartedAt time.Time // the app container's CRI StartedAt
	probes    *prober   // the app's probe loop; nil without App.Probe
}

// Floor runs pods with the minimal CRI calls: RunPodSandbox, then for the
// init container CreateContainer+StartContainer and ContainerStatus polled
// until it exited, then CreateContainer+StartContainer of the app; a pod's
// volumes are plain directories and files it writes before the sandbox and
// passes as CRI mounts. Nothing else: no image checks, no status
// bookkeeping. Safe for concurrent use.
type Floor struct {
	C      *Client
	LogDir string // root of the pods' CRI log directories
	// VolumeDir is the root of the pods' volume directories,
	// <VolumeDir>/<uid>/<volume>; needed only by pods with Volumes.
	VolumeDir string
	Poll      time.Duration // how often an init container's exit is polled
	// After is the probe loops' clock; nil: time.After.
	After func(time.Duration) <-chan time.Time
}

func (f *Floor) after() func(time.Duration) <-chan time.Time {
	if f.After != nil {
		return f.After
	}
	return time.After
}

// StartPod runs p and returns once the app container is started; with
// App.Probe its probe loop then runs, under ctx, until StopPod or
// StopProbes (the caller owns it: call one of them, also after an error).
// Volumes are written before RunPodSandbox, so their time counts, as an
// agent's does. On error the sandbox (and the volumes, once it ran) is
// left for Cleanup and StopPod.
func (f *Floor) StartPod(ctx context.Context, p Pod) (*Started, error) {
	for _, c := range []*Container{p.Init, &p.App} {
		if c == nil {
			continue
		}
		if _, err := f.mounts(p, *c); err != nil {
			return nil, err
		}
	}
	logDir := filepath.Join(f.LogDir, p.Namespace+"_"+p.Name+"_"+p.UID)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("floor pod %s log dir: %w", p.Name, err)
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: p.Name, Namespace: p.Namespace, Uid: p.UID, Attempt: p.Attempt},
		Hostname:     p.Name,
		LogDirectory: logDir,
		Labels:       map[string]string{LabelPodName: p.Name, LabelPodNamespace: p.Namespace, LabelPodUID: p.UID},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
			// The kubelet (and so skiff) always runs the sandbox under the
			// runtime's default seccomp profile (kubernetes#84623): part of
			// what every pod's sandbox costs (~25-30 ms on containerd 2.4).
			Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		}},
	}
	if err := f.writeVolumes(p); err != nil {
		return nil, err
	}
	sb, err := f.C.RT.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("floor pod %s: run sandbox: %w", p.Name, err), f.removeVolumes(p))
	}
	s := &Started{Pod: p, SandboxID: sb.PodSandboxId, Config: cfg}
	if p.Init != nil {
		id, err := f.createStart(ctx, s, *p.Init, 0)
		if err != nil {
			return s, err
		}
		if err := f.waitExited(ctx, id); err != nil {
			return s, fmt.Errorf("floor pod %s init: %w", p.Name, err)
		}
	}
	if s.AppID, err = f.createStart(ctx, s, p.App, 0); err != nil {
		return s, err
	}
	if p.App.Probe != nil {
		s.probes = f.startProbes(ctx, s.AppID, *p.App.Probe, f.after())
	}
	st, err := f.C.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: s.AppID})
	if err != nil {
		return s, fmt.Errorf("floor pod %s: app status: %w", p.Name, err)
	}
	s.StartedAt = time.Unix(0, st.Status.GetStartedAt())
	return s, nil
}

// RestartApp stops the app container (SIGTERM, grace seconds) and creates
// and starts it again with the next attempt number: what an agent does on
// a liveness failure, minus the detection. Returns the new StartedAt. A
// probe loop is stopped first and started again on the new container.
func (f *Floor) RestartApp(ctx context.Context, s *Started, grace int64) (time.Time, error) {
	s.StopProbes()
	if _, err := f.C.RT.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: s.AppID, Timeout: grace}); err != nil {
		return time.Time{}, fmt.Errorf("floor pod %s: stop app: %w", s.Pod.Name, err)
	}
	id, err := f.createStart(ctx, s, s.Pod.App, 1)
	if err != nil {
		return time.Time{}, err
	}
	s.AppID = id
	if s.Pod.App.Probe != nil {
		s.probes = f.startProbes(ctx, id, *s.Pod.App.Probe, f.after())
	}
	st, err := f.C.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return time.Time{}, fmt.Errorf("floor pod %s: app status: %w", s.Pod.Name, err)
	}
	return time.Unix(0, st.Status.GetStartedAt()), nil
}

// StopPod stops the probe loop (waiting for it), the app container
// (SIGTERM, then SIGKILL after grace seconds) and the sandbox, then removes
// the pod's volume directories; removal of the containers and sandbox is
// left to Cleanup, like an agent that keeps stopped pods for their logs.
func (f *Floor) StopPod(ctx context.Context, s *Started, grace int64) error {
	s.StopProbes()
	if s.AppID != "" {
		if _, err := f.C.RT.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: s.AppID, Timeout: grace}); err != nil {
			return fmt.Errorf("floor pod %s: stop app: %w", s.Pod.Name, err)
		}
	}
	if _, err := f.C.RT.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.SandboxID}); err != nil {
		return fmt.Errorf("floor pod %s: stop sandbox: %w", s.Pod.Name, err)
	}
	return f.removeVolumes(s.Pod)
}

func (f *Floor) createStart(ctx context.Context, s *Started, c Container, attempt uint32) (string, error) {
	cc := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: attempt},
		Image:    &runtimeapi.ImageSpec{Image: c.Image},
		Command:  c.Command,
		LogPath:  fmt.Sprintf("%s/%d.log", c.Name, attempt),
		Labels: map[string]string{LabelPodName: s.Pod.Name, LabelPodNamespace: s.Pod.Namespace,
			LabelPodUID: s.Pod.UID, LabelContainer: c.Name},
		Linux: &runtimeapi.LinuxContainerConfig{},
	}
	mounts, err := f.mounts(s.Pod, c)
	if err != nil {
		return "", err
	}
	cc.Mounts = mounts
	if c.CPUShares > 0 {
		cc.Linux.Resources = &runtimeapi.LinuxContainerResources{CpuShares: c.CPUShares}
	}
	resp, err := f.C.RT.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: s.SandboxID, Config: cc, SandboxConfig: s.Config})
	if err != nil {
		return "", fmt.Errorf("floor pod %s: create %s: %w", s.Pod.Name, c.Name, err)
	}
	if _, err := f.C.RT.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.ContainerId}); err != nil {
		return "", fmt.Errorf("floor pod %s: start %s: %w", s.Pod.Name, c.Name, err)
	}
	return resp.ContainerId, nil
}

func (f *Floor) waitExited(ctx context.Context, id string) error {
	for {
		st, err := f.C.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			return fmt.Errorf("status of %s: %w", id, err)
		}
		if st.Status.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			if code := st.Status.GetExitCode(); code != 0 {
				return fmt.Errorf("container %s exited with %d", id, code)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s to exit: %w", id, ctx.Err())
		case <-time.After(f.Poll):
		}
	}
}

// BatchResult is the outcome of StartAll or StopAll.
type BatchResult struct {
	Began   time.Time
	First   time.Time // earliest app StartedAt (StartAll) / earliest stop done (StopAll)
	Last    time.Time // latest
	Started []*Started
}

// StartAll starts pods with parallelism workers (<= 0: one goroutine per
// pod) and returns when all are running, or the first error; on an error
// every probe loop started is stopped again.
func (f *Floor) StartAll(ctx context.Context, pods []Pod, parallelism int) (BatchResult, error) {
	res := BatchResult{Began: time.Now(), Started: make([]*Started, len(pods))}
	err := forEach(len(pods), parallelism, func(i int) error {
		s, err := f.StartPod(ctx, pods[i])
		res.Started[i] = s
		return err
	})
	if err != nil {
		for _, s := range res.Started {
			s.StopProbes()
		}
		return res, err
	}
	for i, s := range res.Started {
		if i == 0 || s.StartedAt.Before(res.First) {
			res.First = s.StartedAt
		}
		if s.StartedAt.After(res.Last) {
			res.Last = s.StartedAt
		}
	}
	return res, nil
}

// StopAll stops the started pods with parallelism workers and returns when
// all are stopped.
func (f *Floor) StopAll(ctx context.Context, started []*Started, parallelism int, grace int64) (BatchResult, error) {
	res := BatchResult{Began: time.Now()}
	err := forEach(len(started), parallelism, func(i int) error {
		if started[i] == nil {
			return nil
		}
		return f.StopPod(ctx, started[i], grace)
	})
	res.Last = time.Now()
	return res, err
}

// forEach runs fn(0..n-1) on at most parallelism goroutines (<= 0: n) and
// returns the first error after all have finished.
func forEach(n, parallelism int, fn func(int) error) error {
	if parallelism <= 0 || parallelism > n {
		parallelism = n
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range parallelism {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
