package criops

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// volumeRT records each container's mounts and what the volume directory
// held when RunPodSandbox was called.
type volumeRT struct {
	*fakeRT
	dir       string // the pod's <VolumeDir>/<uid>
	mu        sync.Mutex
	atSandbox map[string]string // path relative to dir -> content ("" for a directory)
	mounts    map[string][]*runtimeapi.Mount
	failRun   bool
}

func (r *volumeRT) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error) {
	r.mu.Lock()
	r.atSandbox = map[string]string{}
	_ = filepath.WalkDir(r.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == r.dir {
			return err
		}
		rel, _ := filepath.Rel(r.dir, p)
		content := ""
		if !d.IsDir() {
			b, _ := os.ReadFile(p)
			content = string(b)
		}
		info, _ := d.Info()
		r.atSandbox[rel+" "+info.Mode().String()] = content
		return nil
	})
	r.mu.Unlock()
	if r.failRun {
		return nil, errors.New("no sandbox")
	}
	return r.fakeRT.RunPodSandbox(ctx, req, opts...)
}

func (r *volumeRT) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest, opts ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	r.mu.Lock()
	r.mounts[req.Config.Metadata.Name] = req.Config.Mounts
	r.mu.Unlock()
	return r.fakeRT.CreateContainer(ctx, req, opts...)
}

func volumePod() Pod {
	return Pod{Name: "p", Namespace: "ns", UID: "u1",
		App: Container{Name: "app", Image: "img", Mounts: []string{"scratch", "config", "podinfo"}},
		Volumes: []Volume{
			{Name: "scratch", ContainerPath: "/scratch"},
			{Name: "config", ContainerPath: "/etc/config", ReadOnly: true, Files: map[string]string{"app.conf": "a=1\n"}},
			{Name: "podinfo", ContainerPath: "/etc/podinfo", ReadOnly: true, Files: map[string]string{"labels": `app="x"`, "name": "p"}},
		}}
}

func newVolumeFloor(t *testing.T) (*Floor, *volumeRT) {
	t.Helper()
	f, rt, _ := newFakeFloor(t)
	f.VolumeDir = t.TempDir()
	vrt := &volumeRT{fakeRT: rt, dir: filepath.Join(f.VolumeDir, "u1"), mounts: map[string][]*runtimeapi.Mount{}}
	f.C = &Client{RT: vrt}
	return f, vrt
}

// TestFloorWritesVolumesBeforeSandboxAndMountsThem: the volume directories
// (0755) and files (0644) exist when RunPodSandbox is called, the app gets
// one CRI mount per volume with its read-only flag, and StopPod removes
// <VolumeDir>/<uid>.
func TestFloorWritesVolumesBeforeSandboxAndMountsThem(t *testing.T) {
	f, rt := newVolumeFloor(t)
	s, err := f.StartPod(t.Context(), volumePod())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"scratch drwxr-xr-x":         "",
		"config drwxr-xr-x":          "",
		"config/app.conf -rw-r--r--": "a=1\n",
		"podinfo drwxr-xr-x":         "",
		"podinfo/labels -rw-r--r--":  `app="x"`,
		"podinfo/name -rw-r--r--":    "p",
	}
	if len(rt.atSandbox) != len(want) {
		t.Errorf("at RunPodSandbox the volume dir held %v, want %v", rt.atSandbox, want)
	}
	for k, v := range want {
		if got, ok := rt.atSandbox[k]; !ok || got != v {
			t.Errorf("at RunPodSandbox %s = %q (present %v), want %q", k, got, ok, v)
		}
	}
	var got []string
	for _, m := range rt.mounts["app"] {
		got = append(got, m.HostPath+" "+m.ContainerPath+" "+map[bool]string{true: "ro", false: "rw"}[m.Readonly])
	}
	wantMounts := []string{
		filepath.Join(rt.dir, "scratch") + " /scratch rw",
		filepath.Join(rt.dir, "config") + " /etc/config ro",
		filepath.Join(rt.dir, "podinfo") + " /etc/podinfo ro",
	}
	if strings.Join(got, "\n") != strings.Join(wantMounts, "\n") {
		t.Errorf("app mounts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantMounts, "\n"))
	}
	if err := f.StopPod(t.Context(), s, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rt.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after StopPod %s: %v, want it removed", rt.dir, err)
	}
}

// TestFloorRemovesVolumesWhenSandboxFails: a failed RunPodSandbox leaves
// no volume directory behind.
func TestFloorRemovesVolumesWhenSandboxFails(t *testing.T) {
	f, rt := newVolumeFloor(t)
	rt.failRun = true
	if _, err := f.StartPod(t.Context(), volumePod()); err == nil {
		t.Fatal("StartPod: want the sandbox's error")
	}
	if len(rt.atSandbox) == 0 {
		t.Error("volumes were not written before RunPodSandbox")
	}
	if _, err := os.Stat(rt.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after a failed start %s: %v, want it removed", rt.dir, err)
	}
}

// TestFloorRejectsUnknownMount: a container naming a volume the pod lacks
// fails before any CRI call or file.
func TestFloorRejectsUnknownMount(t *testing.T) {
	f, rt := newVolumeFloor(t)
	p := volumePod()
	p.App.Mounts = append(p.App.Mounts, "missing")
	if _, err := f.StartPod(t.Context(), p); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Fatalf("StartPod = %v, want an unknown volume error", err)
	}
	if calls := rt.log(); len(calls) != 0 || rt.atSandbox != nil {
		t.Errorf("calls %v, sandbox %v: want none", calls, rt.atSandbox)
	}
	if _, err := os.Stat(rt.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %v, want none", rt.dir, err)
	}
}

// TestFloorWithoutVolumesNeedsNoVolumeDir: plain pods mount nothing and
// need no VolumeDir.
func TestFloorWithoutVolumesNeedsNoVolumeDir(t *testing.T) {
	f, rt := newVolumeFloor(t)
	f.VolumeDir = ""
	s, err := f.StartPod(t.Context(), Pod{Name: "p", Namespace: "ns", UID: "u1", App: Container{Name: "app", Image: "img"}})
	if err != nil {
		t.Fatal(err)
	}
	if m := rt.mounts["app"]; len(m) != 0 {
		t.Errorf("app mounts = %v, want none", m)
	}
	if err := f.StopPod(context.Background(), s, 1); err != nil {
		t.Fatal(err)
	}
}
