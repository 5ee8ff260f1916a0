package cri

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeCRI is an in-process CRI server: it records requests and answers
// from canned data. Unknown IDs give codes.NotFound, like containerd.
type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	mu          sync.Mutex
	apiVersion  string
	sandboxes   map[string]*runtimeapi.PodSandboxStatus
	containers  map[string]*runtimeapi.ContainerStatus
	ctrSandbox  map[string]string
	images      map[string]*runtimeapi.Image
	failWith    codes.Code // non-OK: every mutating call fails with it
	block       bool       // StopPodSandbox blocks until the caller gives up
	lastRun     *runtimeapi.RunPodSandboxRequest
	lastCreate  *runtimeapi.CreateContainerRequest
	lastStop    *runtimeapi.StopContainerRequest
	lastUpdate  *runtimeapi.UpdateContainerResourcesRequest
	lastExec    *runtimeapi.ExecSyncRequest
	lastListCtr *runtimeapi.ListContainersRequest
	lastListSb  *runtimeapi.ListPodSandboxRequest
	execResp    *runtimeapi.ExecSyncResponse
	// streamURL answers Exec, Attach and PortForward ("" is an empty
	// answer); the last requests are kept.
	streamURL   string
	lastStream  *runtimeapi.ExecRequest
	lastAttach  *runtimeapi.AttachRequest
	lastForward *runtimeapi.PortForwardRequest
	// stopDeadline is the deadline of the last StopContainer's context
	// as the server saw it (zero: none).
	stopDeadline time.Time
}

func newFakeCRI() *fakeCRI {
	return &fakeCRI{
		apiVersion: "v1",
		sandboxes:  map[string]*runtimeapi.PodSandboxStatus{},
		containers: map[string]*runtimeapi.ContainerStatus{},
		ctrSandbox: map[string]string{},
		images:     map[string]*runtimeapi.Image{},
	}
}

// serve starts s on a unix socket in a temp dir and returns the endpoint.
func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	go func() { _ = srv.Serve(lis) }() // owned by the test; stopped in Cleanup
	t.Cleanup(srv.Stop)
	return "unix://" + sock
}

// newTestRuntime serves f and connects a Runtime to it.
func newTestRuntime(t *testing.T, f *fakeCRI, timeout time.Duration) *Runtime {
	t.Helper()
	ep := serve(t, func(s *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(s, f)
		runtimeapi.RegisterImageServiceServer(s, f)
	})
	r, err := New(context.Background(), ep, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func (f *fakeCRI) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fake", RuntimeVersion: "1.2.3", RuntimeApiVersion: f.apiVersion}, nil
}

func (f *fakeCRI) fail() error {
	if f.failWith != codes.OK {
		return status.Error(f.failWith, "injected")
	}
	return nil
}

func (f *fakeCRI) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastRun = req
	if err := f.fail(); err != nil {
		return nil, err
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: "sb1"}, nil
}

func (f *fakeCRI) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &runtimeapi.StopPodSandboxResponse{}, f.lookupSandbox(req.PodSandboxId)
}

func (f *fakeCRI) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	return &runtimeapi.RemovePodSandboxResponse{}, f.lookupSandbox(req.PodSandboxId)
}

func (f *fakeCRI) lookupSandbox(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return err
	}
	if _, ok := f.sandboxes[id]; !ok {
		return status.Errorf(codes.NotFound, "sandbox %q not found", id)
	}
	return nil
}

func (f *fakeCRI) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := f.lookupSandbox(req.PodSandboxId); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.PodSandboxStatusResponse{Status: f.sandboxes[req.PodSandboxId]}, nil
}

func (f *fakeCRI) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastListSb = req
	var items []*runtimeapi.PodSandbox
	for _, s := range f.sandboxes {
		items = append(items, &runtimeapi.PodSandbox{Id: s.Id, Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt, Labels: s.Labels, Annotations: s.Annotations})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

func (f *fakeCRI) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastCreate = req
	if err := f.fail(); err != nil {
		return nil, err
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: "c1"}, nil
}

func (f *fakeCRI) lookupContainer(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return err
	}
	if _, ok := f.containers[id]; !ok {
		return status.Errorf(codes.NotFound, "container %q not found", id)
	}
	return nil
}

func (f *fakeCRI) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	return &runtimeapi.StartContainerResponse{}, f.lookupContainer(req.ContainerId)
}

func (f *fakeCRI) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	f.mu.Lock()
	f.lastStop = req
	f.stopDeadline, _ = ctx.Deadline()
	f.mu.Unlock()
	return &runtimeapi.StopContainerResponse{}, f.lookupContainer(req.ContainerId)
}

func (f *fakeCRI) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	f.mu.Lock()
	f.lastUpdate = req
	f.mu.Unlock()
	return &runtimeapi.UpdateContainerResourcesResponse{}, f.lookupContainer(req.ContainerId)
}

func (f *fakeCRI) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	return &runtimeapi.RemoveContainerResponse{}, f.lookupContainer(req.ContainerId)
}

func (f *fakeCRI) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	if err := f.lookupContainer(req.ContainerId); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ContainerStatusResponse{Status: f.containers[req.ContainerId]}, nil
}

func (f *fakeCRI) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastListCtr = req
	var out []*runtimeapi.Container
	for id, s := range f.containers {
		if req.Filter.GetId() != "" && req.Filter.GetId() != id {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id: id, PodSandboxId: f.ctrSandbox[id], Metadata: s.Metadata, Image: s.Image, ImageRef: s.ImageRef,
			State: s.State, CreatedAt: s.CreatedAt, Labels: s.Labels, Annotations: s.Annotations,
		})
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (f *fakeCRI) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if err := f.lookupContainer(req.ContainerId); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastExec = req
	return f.execResp, nil
}

func (f *fakeCRI) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// CRI reports a missing image as an empty response, not an error.
	return &runtimeapi.ImageStatusResponse{Image: f.images[req.Image.GetImage()]}, nil
}

func (f *fakeCRI) ListImages(context.Context, *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Image
	for _, img := range f.images {
		out = append(out, img)
	}
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

func (f *fakeCRI) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return nil, err
	}
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:" + req.Image.GetImage()}, nil
}

func (f *fakeCRI) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return nil, err
	}
	if _, ok := f.images[req.Image.GetImage()]; !ok {
		return nil, status.Error(codes.NotFound, "no such image")
	}
	delete(f.images, req.Image.GetImage())
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (f *fakeCRI) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := f.lookupContainer(req.ContainerId); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastStream = req
	return &runtimeapi.ExecResponse{Url: f.streamURL}, nil
}

func (f *fakeCRI) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := f.lookupContainer(req.ContainerId); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastAttach = req
	return &runtimeapi.AttachResponse{Url: f.streamURL}, nil
}

func (f *fakeCRI) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if err := f.lookupSandbox(req.PodSandboxId); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastForward = req
	return &runtimeapi.PortForwardResponse{Url: f.streamURL}, nil
}
