package cri

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

func TestDialTarget(t *testing.T) {
	tests := []struct {
		endpoint, want, wantErr string
	}{
		{endpoint: "unix:///run/x.sock", want: "unix:///run/x.sock"},
		{endpoint: "/run/x.sock", want: "unix:///run/x.sock"},
		{endpoint: "", wantErr: "empty"},
		{endpoint: "unix://", wantErr: "no socket path"},
		{endpoint: "tcp://1.2.3.4:1", wantErr: "want unix"},
		{endpoint: "run/x.sock", wantErr: "want unix"},
	}
	for _, tt := range tests {
		got, err := dialTarget(tt.endpoint)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("dialTarget(%q) err = %v, want %q", tt.endpoint, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("dialTarget(%q) = %q, %v; want %q", tt.endpoint, got, err, tt.want)
		}
	}
}

// noCRI serves only the image service: Version is unimplemented.
type noCRI struct {
	runtimeapi.UnimplementedImageServiceServer
}

func TestNewChecksCRIv1(t *testing.T) {
	ctx := context.Background()
	t.Run("ok", func(t *testing.T) {
		r := newTestRuntime(t, newFakeCRI(), time.Second)
		v, err := r.Version(ctx)
		if err != nil || v.String() != "fake 1.2.3 (CRI v1)" || v.Name != "fake" {
			t.Fatalf("Version = %q, %v", v, err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
	t.Run("not CRI", func(t *testing.T) {
		ep := serve(t, func(s *grpc.Server) { runtimeapi.RegisterImageServiceServer(s, noCRI{}) })
		_, err := New(ctx, ep, time.Second)
		if err == nil || !strings.Contains(err.Error(), "does not serve CRI v1") || status.Code(err) != codes.Unimplemented {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("old API version", func(t *testing.T) {
		f := newFakeCRI()
		f.apiVersion = "v1alpha2"
		ep := serve(t, func(s *grpc.Server) { runtimeapi.RegisterRuntimeServiceServer(s, f) })
		_, err := New(ctx, ep, time.Second)
		if err == nil || !strings.Contains(err.Error(), "skiff needs v1") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no server", func(t *testing.T) {
		_, err := New(ctx, "unix://"+t.TempDir()+"/none.sock", 200*time.Millisecond)
		if err == nil {
			t.Fatal("want error")
		}
	})
	t.Run("bad timeout", func(t *testing.T) {
		if _, err := New(ctx, "/x.sock", 0); err == nil {
			t.Fatal("want error")
		}
	})
}

// Ping is nil exactly when a CRI v1 runtime answers at the endpoint.
func TestPing(t *testing.T) {
	tests := []struct {
		name     string
		endpoint func(t *testing.T) string
		ok       bool
	}{
		{"CRI v1", func(t *testing.T) string {
			return serve(t, func(s *grpc.Server) { runtimeapi.RegisterRuntimeServiceServer(s, newFakeCRI()) })
		}, true},
		{"not CRI", func(t *testing.T) string {
			return serve(t, func(s *grpc.Server) { runtimeapi.RegisterImageServiceServer(s, noCRI{}) })
		}, false},
		{"no server", func(t *testing.T) string { return "unix://" + t.TempDir() + "/none.sock" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := Ping(ctx, tt.endpoint(t)); (err == nil) != tt.ok {
				t.Fatalf("Ping = %v, want ok %t", err, tt.ok)
			}
		})
	}
}

func testSandboxSpec(hostNetwork bool) *runtime.SandboxSpec {
	return &runtime.SandboxSpec{
		Name: "web", Namespace: "ns", UID: "u1", Attempt: 2,
		Hostname:     "web-host",
		LogDirectory: "/var/log/pods/ns_web_u1",
		HostNetwork:  hostNetwork,
		DNS:          &runtime.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"s.example"}, Options: []string{"ndots:1"}},
		PortMappings: []runtime.PortMapping{
			{Protocol: "TCP", ContainerPort: 80, HostPort: 8080, HostIP: "127.0.0.1"},
			{Protocol: "udp", ContainerPort: 53, HostPort: 5353},
			{Protocol: "SCTP", ContainerPort: 9},
			{ContainerPort: 1},
		},
		Labels:         map[string]string{"io.skiff.managed": "true"},
		Annotations:    map[string]string{"a": "b"},
		CgroupParent:   "/skiff/pod-u1",
		RuntimeHandler: "runc",
		Privileged:     true,
	}
}

func TestRunSandboxMapping(t *testing.T) {
	for _, hostNetwork := range []bool{false, true} {
		f := newFakeCRI()
		r := newTestRuntime(t, f, time.Second)
		spec := testSandboxSpec(hostNetwork)
		id, err := r.RunSandbox(context.Background(), spec)
		if err != nil || id != "sb1" {
			t.Fatalf("RunSandbox = %q, %v", id, err)
		}
		wantNet, wantHostname := runtimeapi.NamespaceMode_POD, "web-host"
		if hostNetwork {
			wantNet, wantHostname = runtimeapi.NamespaceMode_NODE, ""
		}
		want := &runtimeapi.RunPodSandboxRequest{
			RuntimeHandler: "runc",
			Config: &runtimeapi.PodSandboxConfig{
				Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "u1", Attempt: 2},
				Hostname:     wantHostname,
				LogDirectory: "/var/log/pods/ns_web_u1",
				DnsConfig:    &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"s.example"}, Options: []string{"ndots:1"}},
				PortMappings: []*runtimeapi.PortMapping{
					{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080, HostIp: "127.0.0.1"},
					{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353},
					{Protocol: runtimeapi.Protocol_SCTP, ContainerPort: 9},
					{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 1},
				},
				Labels:      map[string]string{"io.skiff.managed": "true"},
				Annotations: map[string]string{"a": "b"},
				Linux: &runtimeapi.LinuxPodSandboxConfig{
					CgroupParent: "/skiff/pod-u1",
					SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
						NamespaceOptions: &runtimeapi.NamespaceOption{Network: wantNet, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
						Privileged:       true,
					},
				},
			},
		}
		if !proto.Equal(f.lastRun, want) {
			t.Errorf("hostNetwork=%v: RunPodSandbox got\n%v\nwant\n%v", hostNetwork, f.lastRun, want)
		}
	}
}

func TestCreateContainerMapping(t *testing.T) {
	f := newFakeCRI()
	r := newTestRuntime(t, f, time.Second)
	sb := testSandboxSpec(true)
	uid, gid := int64(1000), int64(2000)
	spec := &runtime.ContainerSpec{
		Name: "app", Attempt: 3, Image: "busybox:1", Command: []string{"sh"}, Args: []string{"-c", "true"},
		WorkingDir: "/w", Env: []runtime.KeyValue{{Key: "A", Value: "1"}},
		Mounts:  []runtime.Mount{{HostPath: "/h", ContainerPath: "/c", ReadOnly: true}},
		LogPath: "app/3.log", Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"x": "y"},
		Stdin: true, StdinOnce: true, TTY: true, Privileged: true, RunAsUser: &uid, RunAsGroup: &gid,
		Resources: &runtime.Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 1 << 20, Unified: map[string]string{"memory.high": "1000"}},
	}
	id, err := r.CreateContainer(context.Background(), "sb1", spec, sb)
	if err != nil || id != "c1" {
		t.Fatalf("CreateContainer = %q, %v", id, err)
	}
	want := &runtimeapi.CreateContainerRequest{
		PodSandboxId:  "sb1",
		SandboxConfig: sandboxConfig(sb),
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 3},
			Image:    &runtimeapi.ImageSpec{Image: "busybox:1", UserSpecifiedImage: "busybox:1"},
			Command:  []string{"sh"}, Args: []string{"-c", "true"}, WorkingDir: "/w",
			Envs:   []*runtimeapi.KeyValue{{Key: "A", Value: []byte("1")}},
			Mounts: []*runtimeapi.Mount{{HostPath: "/h", ContainerPath: "/c", Readonly: true}},
			Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"x": "y"},
			LogPath: "app/3.log", Stdin: true, StdinOnce: true, Tty: true,
			Linux: &runtimeapi.LinuxContainerConfig{
				Resources: &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 1 << 20, Unified: map[string]string{"memory.high": "1000"}},
				SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
					Privileged:       true,
					NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
					RunAsUser:        &runtimeapi.Int64Value{Value: 1000},
					RunAsGroup:       &runtimeapi.Int64Value{Value: 2000},
				},
			},
		},
	}
	if !proto.Equal(f.lastCreate, want) {
		t.Errorf("CreateContainer got\n%v\nwant\n%v", f.lastCreate, want)
	}
	// An ephemeral container with a target joins the target's PID namespace;
	// the sandbox's config is not changed by it.
	spec.TargetContainerID = "c0"
	if _, err := r.CreateContainer(context.Background(), "sb1", spec, sb); err != nil {
		t.Fatal(err)
	}
	if ns := f.lastCreate.Config.Linux.SecurityContext.NamespaceOptions; ns.Pid != runtimeapi.NamespaceMode_TARGET || ns.TargetId != "c0" {
		t.Errorf("target: namespace options %v, want PID TARGET c0", ns)
	}
	if !proto.Equal(f.lastCreate.SandboxConfig, sandboxConfig(sb)) {
		t.Error("the target changed the sandbox config")
	}
	if _, err := r.CreateContainer(context.Background(), "sb1", spec, nil); err == nil {
		t.Error("CreateContainer without sandbox spec: want error")
	}
}

func TestStatusMapping(t *testing.T) {
	f := newFakeCRI()
	created, started := time.Unix(100, 5), time.Unix(200, 7)
	f.sandboxes["sb1"] = &runtimeapi.PodSandboxStatus{
		Id: "sb1", Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "u1", Attempt: 1},
		State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: created.UnixNano(),
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.88.0.5", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00::5"}}},
		Linux:   &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
		Labels:  map[string]string{"k": "v"}, Annotations: map[string]string{"a": "b"},
	}
	f.sandboxes["sb2"] = &runtimeapi.PodSandboxStatus{Id: "sb2", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}
	f.containers["c1"] = &runtimeapi.ContainerStatus{
		Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 4},
		State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: created.UnixNano(), StartedAt: started.UnixNano(),
		ExitCode: 137, Image: &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1"}, ImageRef: "sha256:abc",
		Reason: "OOMKilled", Message: "boom", LogPath: "/var/log/pods/x/app/4.log",
		Labels: map[string]string{"k": "v"}, Annotations: map[string]string{"a": "b"},
		User: &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{Uid: 1000, Gid: 3000, SupplementalGroups: []int64{3000, 4000}}},
	}
	f.ctrSandbox["c1"] = "sb1"
	f.containers["c2"] = &runtimeapi.ContainerStatus{Id: "c2", State: runtimeapi.ContainerState_CONTAINER_CREATED}
	r := newTestRuntime(t, f, time.Second)
	ctx := context.Background()

	st, err := r.SandboxStatus(ctx, "sb1")
	if err != nil {
		t.Fatal(err)
	}
	wantSb := &runtime.SandboxStatus{
		Sandbox: runtime.Sandbox{ID: "sb1", Name: "web", Namespace: "ns", UID: "u1", Attempt: 1, State: runtime.SandboxReady,
			CreatedAt: created, Labels: map[string]string{"k": "v"}, Annotations: map[string]string{"a": "b"}},
		IP: "10.88.0.5", AdditionalIPs: []string{"fd00::5"}, HostNetwork: true,
	}
	if !reflect.DeepEqual(st, wantSb) {
		t.Errorf("SandboxStatus =\n%+v\nwant\n%+v", st, wantSb)
	}
	if st, err := r.SandboxStatus(ctx, "sb2"); err != nil || st.State != runtime.SandboxNotReady || st.HostNetwork || !st.CreatedAt.IsZero() {
		t.Errorf("SandboxStatus sb2 = %+v, %v", st, err)
	}

	cs, err := r.ContainerStatus(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	wantC := &runtime.ContainerStatus{
		Container: runtime.Container{ID: "c1", Name: "app", Attempt: 4, // no SandboxID: not in CRI's status
			Image: "docker.io/library/busybox:1", ImageRef: "sha256:abc", State: runtime.ContainerExited,
			CreatedAt: created, Labels: map[string]string{"k": "v"}, Annotations: map[string]string{"a": "b"}},
		StartedAt: started, ExitCode: 137, Reason: "OOMKilled", Message: "boom", LogPath: "/var/log/pods/x/app/4.log",
		User: &runtime.ContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}},
	}
	if !reflect.DeepEqual(cs, wantC) {
		t.Errorf("ContainerStatus =\n%+v\nwant\n%+v", cs, wantC)
	}
	if !cs.FinishedAt.IsZero() {
		t.Errorf("FinishedAt 0 should stay the zero time, got %v", cs.FinishedAt)
	}
	if cs, err := r.ContainerStatus(ctx, "c2"); err != nil || cs.State != runtime.ContainerCreated || cs.User != nil {
		t.Errorf("ContainerStatus c2 = %+v, %v", cs, err)
	}
}

func TestListFilters(t *testing.T) {
	f := newFakeCRI()
	r := newTestRuntime(t, f, time.Second)
	ctx := context.Background()
	running := runtime.ContainerRunning
	if _, err := r.ListContainers(ctx, runtime.ContainerFilter{SandboxID: "sb1", State: &running, Labels: map[string]string{"a": "b"}}); err != nil {
		t.Fatal(err)
	}
	wantF := &runtimeapi.ContainerFilter{
		PodSandboxId: "sb1", LabelSelector: map[string]string{"a": "b"},
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}
	if !proto.Equal(f.lastListCtr.Filter, wantF) {
		t.Errorf("container filter = %v, want %v", f.lastListCtr.Filter, wantF)
	}
	if _, err := r.ListContainers(ctx, runtime.ContainerFilter{}); err != nil {
		t.Fatal(err)
	}
	if f.lastListCtr.Filter.GetState() != nil || f.lastListCtr.Filter.GetPodSandboxId() != "" {
		t.Errorf("empty filter sent as %v", f.lastListCtr.Filter)
	}
	if _, err := r.ListSandboxes(ctx, map[string]string{"io.skiff.managed": "true"}); err != nil {
		t.Fatal(err)
	}
	if got := f.lastListSb.Filter.GetLabelSelector(); !reflect.DeepEqual(got, map[string]string{"io.skiff.managed": "true"}) {
		t.Errorf("sandbox label selector = %v", got)
	}
}

func TestContainerStateRoundTrip(t *testing.T) {
	for _, s := range []runtime.ContainerState{runtime.ContainerUnknown, runtime.ContainerCreated, runtime.ContainerRunning, runtime.ContainerExited} {
		if got := containerStateFromCRI(containerStateToCRI(s)); got != s {
			t.Errorf("round trip %v = %v", s, got)
		}
	}
}

func TestErrorTranslation(t *testing.T) {
	f := newFakeCRI()
	r := newTestRuntime(t, f, time.Second)
	ctx := context.Background()

	// Lookups of missing objects wrap runtime.ErrNotFound.
	notFound := map[string]error{}
	_, notFound["SandboxStatus"] = r.SandboxStatus(ctx, "nope")
	_, notFound["ContainerStatus"] = r.ContainerStatus(ctx, "nope")
	_, notFound["ImageStatus"] = r.ImageStatus(ctx, "nope")
	notFound["StartContainer"] = r.StartContainer(ctx, "nope")
	_, notFound["ExecSync"] = r.ExecSync(ctx, "nope", []string{"true"}, 0)
	for name, err := range notFound {
		if !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", name, err)
		}
	}
	// Stops and removes of missing objects are idempotent.
	idempotent := map[string]error{
		"StopSandbox":     r.StopSandbox(ctx, "nope"),
		"RemoveSandbox":   r.RemoveSandbox(ctx, "nope"),
		"StopContainer":   r.StopContainer(ctx, "nope", time.Second),
		"RemoveContainer": r.RemoveContainer(ctx, "nope"),
		"RemoveImage":     r.RemoveImage(ctx, "nope"),
	}
	for name, err := range idempotent {
		if err != nil {
			t.Errorf("%s on a missing object: %v", name, err)
		}
	}
	// Other codes pass through, not as ErrNotFound.
	f.sandboxes["sb1"] = &runtimeapi.PodSandboxStatus{Id: "sb1"}
	f.failWith = codes.Internal
	errs := map[string]error{
		"StopSandbox": r.StopSandbox(ctx, "sb1"),
		"RemoveImage": r.RemoveImage(ctx, "x"),
	}
	_, errs["RunSandbox"] = r.RunSandbox(ctx, testSandboxSpec(false))
	_, errs["PullImage"] = r.PullImage(ctx, "x", nil)
	for name, err := range errs {
		if err == nil || errors.Is(err, runtime.ErrNotFound) || status.Code(err) != codes.Internal {
			t.Errorf("%s: err = %v, want Internal", name, err)
		}
	}
}

// TestPullImageErrorVerbatim_E9: a failed pull is the runtime's gRPC error
// as is, NotFound included, since the kubelet's Failed event and
// ErrImagePull message show it verbatim.
func TestPullImageErrorVerbatim_E9(t *testing.T) {
	f := newFakeCRI()
	r := newTestRuntime(t, f, time.Second)
	f.failWith = codes.NotFound
	_, err := r.PullImage(context.Background(), "reg/missing:1", nil)
	if err == nil || errors.Is(err, runtime.ErrNotFound) || !strings.HasPrefix(err.Error(), "rpc error: code = NotFound desc = ") {
		t.Errorf("PullImage = %v, want the gRPC NotFound error verbatim", err)
	}
}

func TestPerCallTimeout(t *testing.T) {
	f := newFakeCRI()
	f.block = true
	r := newTestRuntime(t, f, 200*time.Millisecond)
	start := time.Now()
	err := r.StopSandbox(context.Background(), "sb1")
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("call took %v", d)
	}
}

func TestExecAndStopTimeouts(t *testing.T) {
	f := newFakeCRI()
	f.containers["c1"] = &runtimeapi.ContainerStatus{Id: "c1"}
	f.execResp = &runtimeapi.ExecSyncResponse{Stdout: []byte("out"), Stderr: []byte("err"), ExitCode: 3}
	r := newTestRuntime(t, f, time.Second)
	ctx := context.Background()
	res, err := r.ExecSync(ctx, "c1", []string{"false"}, 1500*time.Millisecond)
	if err != nil || string(res.Stdout) != "out" || string(res.Stderr) != "err" || res.ExitCode != 3 {
		t.Fatalf("ExecSync = %+v, %v", res, err)
	}
	if f.lastExec.Timeout != 2 || !reflect.DeepEqual(f.lastExec.Cmd, []string{"false"}) {
		t.Errorf("exec request = %v, want timeout 2s (rounded up)", f.lastExec)
	}
	if err := r.StopContainer(ctx, "c1", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if f.lastStop.Timeout != 30 {
		t.Errorf("stop timeout = %d, want 30", f.lastStop.Timeout)
	}
	for d, want := range map[time.Duration]int64{0: 0, -time.Second: 0, time.Nanosecond: 1, time.Second: 1, 1001 * time.Millisecond: 2} {
		if got := ceilSeconds(d); got != want {
			t.Errorf("ceilSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestImages(t *testing.T) {
	f := newFakeCRI()
	f.images["busybox"] = &runtimeapi.Image{Id: "sha256:1", RepoTags: []string{"busybox:latest"}, Size: 42, Uid: &runtimeapi.Int64Value{Value: 65534}}
	f.images["named"] = &runtimeapi.Image{Id: "sha256:2", Username: "nobody"}
	r := newTestRuntime(t, f, time.Second)
	ctx := context.Background()
	img, err := r.ImageStatus(ctx, "busybox")
	want := &runtime.Image{ID: "sha256:1", RepoTags: []string{"busybox:latest"}, Size: 42, User: "65534"}
	if err != nil || !reflect.DeepEqual(img, want) {
		t.Fatalf("ImageStatus = %+v, %v", img, err)
	}
	if img, err := r.ImageStatus(ctx, "named"); err != nil || img.User != "nobody" {
		t.Fatalf("ImageStatus named = %+v, %v", img, err)
	}
	imgs, err := r.ListImages(ctx)
	if err != nil || len(imgs) != 2 {
		t.Fatalf("ListImages = %v, %v", imgs, err)
	}
	ref, err := r.PullImage(ctx, "x", nil)
	if err != nil || ref != "sha256:x" {
		t.Fatalf("PullImage = %q, %v", ref, err)
	}
	if err := r.RemoveImage(ctx, "busybox"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ImageStatus(ctx, "busybox"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("after remove: %v", err)
	}
}

// TestStopContainerDeadline: StopContainer asks the runtime for the grace
// period in whole seconds (rounded up) and gives the call the per-call
// timeout plus that period, so a container that uses all its grace is not
// cut off (and a hung runtime is given up on). The fake CRI server records
// the deadline gRPC handed it: it lies between the client's clock before
// and after the call plus the budget, however slow the machine.
func TestStopContainerDeadline(t *testing.T) {
	const callTimeout = time.Second
	tests := []struct {
		grace    time.Duration
		wantSecs int64
	}{
		{0, 0},
		{time.Second, 1},
		{1500 * time.Millisecond, 2},
		{5 * time.Second, 5},
		{45 * time.Second, 45},
	}
	f := newFakeCRI()
	f.containers["c1"] = &runtimeapi.ContainerStatus{Id: "c1"}
	r := newTestRuntime(t, f, callTimeout)
	for _, tt := range tests {
		t.Run(tt.grace.String(), func(t *testing.T) {
			before := time.Now()
			if err := r.StopContainer(context.Background(), "c1", tt.grace); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			f.mu.Lock()
			secs, dl := f.lastStop.Timeout, f.stopDeadline
			f.mu.Unlock()
			if secs != tt.wantSecs {
				t.Errorf("request timeout %ds, want %ds", secs, tt.wantSecs)
			}
			budget := callTimeout + time.Duration(tt.wantSecs)*time.Second
			// gRPC sends the time left at microsecond precision: allow 1ms.
			lo, hi := before.Add(budget-time.Millisecond), after.Add(budget+after.Sub(before)+time.Millisecond)
			if dl.IsZero() {
				t.Fatalf("StopContainer reached the server without a deadline, want %v", budget)
			}
			if dl.Before(lo) || dl.After(hi) {
				t.Errorf("server deadline %v after the call began, want %v (call timeout + grace) within [%v, %v]",
					dl.Sub(before), budget, lo.Sub(before), hi.Sub(before))
			}
		})
	}
}

// TestUpdateContainerResources: an in-place resize reaches CRI with the
// container's ID and its Linux resources; a missing container is
// runtime.ErrNotFound.
func TestUpdateContainerResources(t *testing.T) {
	f := newFakeCRI()
	f.containers["c1"] = &runtimeapi.ContainerStatus{Id: "c1"}
	r := newTestRuntime(t, f, time.Second)
	res := &runtime.Resources{CPUShares: 153, CPUQuota: 30000, CPUPeriod: 100000, MemoryLimit: 96 << 20}
	if err := r.UpdateContainerResources(context.Background(), "c1", res); err != nil {
		t.Fatal(err)
	}
	got := f.lastUpdate
	if got.ContainerId != "c1" || got.Linux.CpuShares != 153 || got.Linux.CpuQuota != 30000 || got.Linux.CpuPeriod != 100000 || got.Linux.MemoryLimitInBytes != 96<<20 {
		t.Errorf("request %+v", got)
	}
	if err := r.UpdateContainerResources(context.Background(), "gone", res); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("missing container: %v, want ErrNotFound", err)
	}
}
