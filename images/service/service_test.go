package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/server"
)

var imagesNow = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// imagesRuntime is a runtime.Runtime with images and containers; other
// methods panic.
type imagesRuntime struct {
	runtime.Runtime
	images     []*runtime.Image
	containers []*runtime.Container
	removed    []string
	pulls      []string // "ref user" per PullImage call
	pullOK     func(user string) bool
}

func (r *imagesRuntime) ListImages(context.Context) ([]*runtime.Image, error) { return r.images, nil }

func (r *imagesRuntime) ListContainers(context.Context, runtime.ContainerFilter) ([]*runtime.Container, error) {
	return r.containers, nil
}

func (r *imagesRuntime) ImageStatus(_ context.Context, ref string) (*runtime.Image, error) {
	for _, img := range r.images {
		if img.ID == ref || strings.Contains(strings.Join(img.RepoTags, " ")+" ", ref+" ") {
			return img, nil
		}
	}
	return nil, fmt.Errorf("image %s: %w", ref, runtime.ErrNotFound)
}

func (r *imagesRuntime) RemoveImage(_ context.Context, ref string) error {
	r.removed = append(r.removed, ref)
	return nil
}

func (r *imagesRuntime) PullImage(_ context.Context, ref string, auth *runtime.AuthConfig) (string, error) {
	user := "<anonymous>"
	if auth != nil {
		user = auth.Username
	}
	r.pulls = append(r.pulls, ref+" "+user)
	if r.pullOK != nil && !r.pullOK(user) {
		return "", errors.New("401 unauthorized")
	}
	r.images = append(r.images, &runtime.Image{ID: "sha256:pulled", RepoTags: []string{ref}, Size: 42})
	return "sha256:pulled", nil
}

func testImagesRuntime() *imagesRuntime {
	return &imagesRuntime{
		images: []*runtime.Image{
			{ID: "sha256:busy", RepoTags: []string{"busybox:1"}, Size: 10},
			{ID: "sha256:pause", RepoTags: []string{"pause:1"}, Pinned: true},
			{ID: "sha256:old", RepoTags: []string{"old:1"}, RepoDigests: []string{"old@sha256:d1"}},
			{ID: "sha256:free", RepoTags: []string{"free:1"}},
			// The managed containerd's imported pause image: not pinned.
			{ID: "sha256:sandbox", RepoTags: []string{"skiff.local/pause:1"}},
		},
		containers: []*runtime.Container{
			{Name: "app", Image: "busybox:1", ImageRef: "sha256:busy", Labels: map[string]string{
				"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default"}},
			{Name: "exited", ImageRef: "old@sha256:d1", State: runtime.ContainerExited},
		},
	}
}

func TestAgentImagesList(t *testing.T) {
	rt := testImagesRuntime()
	last := imagesNow.Add(-time.Hour)
	a := New(rt, nil, Deps{Keep: []string{"skiff.local/pause:1"}, Records: func() map[string]images.Record {
		return map[string]images.Record{"sha256:free": {LastUsed: last}, "sha256:pause": {FirstDetected: last}}
	}})
	got, err := a.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	summary := map[string]string{}
	for _, img := range got {
		s := fmt.Sprintf("inUse=%t pinned=%t", img.InUse, img.Pinned)
		if img.LastUsed != nil {
			s += " last=" + img.LastUsed.Format(time.TimeOnly)
		}
		summary[img.ID] = s
	}
	want := map[string]string{
		"sha256:busy":  "inUse=true pinned=false",
		"sha256:pause": "inUse=false pinned=true", // FirstDetected is not a use
		"sha256:old":   "inUse=true pinned=false", // used by digest, by an exited container
		"sha256:free":  "inUse=false pinned=false last=09:00:00",
		// A kept image shows pinned: it is never removed.
		"sha256:sandbox": "inUse=false pinned=true",
	}
	if fmt.Sprint(summary) != fmt.Sprint(want) {
		t.Errorf("List:\n%v\nwant\n%v", summary, want)
	}
}

func TestAgentImagesRemove(t *testing.T) {
	rt := testImagesRuntime()
	a := New(rt, nil, Deps{Keep: []string{"skiff.local/pause:1"}})
	ctx := context.Background()
	for ref, want := range map[string]error{
		"busybox:1": server.ErrImageInUse, "pause:1": server.ErrImageInUse, "sha256:old": server.ErrImageInUse,
		"sha256:sandbox": server.ErrImageInUse, // the sandbox image, by ID
		"nope:1":         runtime.ErrNotFound,
	} {
		if err := a.Remove(ctx, ref); !errors.Is(err, want) {
			t.Errorf("Remove(%s) = %v, want %v", ref, err, want)
		}
	}
	if err := a.Remove(ctx, "busybox:1"); err == nil || !strings.Contains(err.Error(), "app of pod default/web") {
		t.Errorf("Remove of an image in use: %v, want the container named", err)
	}
	if len(rt.removed) != 0 {
		t.Fatalf("removed %v before any removable image", rt.removed)
	}
	if err := a.Remove(ctx, "free:1"); err != nil {
		t.Fatal(err)
	}
	if len(rt.removed) != 1 || rt.removed[0] != "sha256:free" {
		t.Errorf("removed %v, want the image by ID", rt.removed)
	}
}

// fakeCreds returns node credentials for every image, and records the
// pods it was asked for.
type fakeCreds struct{ pods []*v1.Pod }

func (f *fakeCreds) ForPod(pod *v1.Pod, image string) ([]runtime.AuthConfig, []string, []string) {
	f.pods = append(f.pods, pod)
	return []runtime.AuthConfig{{Username: "first"}, {Username: "second"}}, nil, nil
}

// TestAgentImagesPull_E16: the CLI's pull uses the node's credentials
// (no pod's secrets) and tries them in order until one works, both through
// the runtime directly and through the agent's puller (as the node wires it).
func TestAgentImagesPull_E16(t *testing.T) {
	for _, tc := range []struct {
		name string
		pull func(rt runtime.Images, clk clock.PassiveClock) pullFunc
	}{
		{"direct", directPull},
		{"puller", func(rt runtime.Images, clk clock.PassiveClock) pullFunc {
			p, err := images.NewPuller(rt, clk, images.PullerConfig{SerializePulls: true})
			if err != nil {
				t.Fatal(err)
			}
			return New(nil, nil, Deps{Puller: p}).pull
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := testImagesRuntime()
			rt.pullOK = func(user string) bool { return user == "second" }
			clk := testingclock.NewFakePassiveClock(imagesNow)
			creds := &fakeCreds{}
			woke := 0
			a := &Service{rt: rt, creds: creds, pull: tc.pull(rt, clk), wake: func() { woke++ }}
			res, err := a.Pull(context.Background(), "reg/app:1")
			if err != nil {
				t.Fatal(err)
			}
			if res.ImageID != "sha256:pulled" || res.Size != 42 {
				t.Errorf("result %+v", res)
			}
			if woke != 1 {
				t.Errorf("pod workers woken %d times after a pull, want 1 (a pod in ImagePullBackOff starts at once)", woke)
			}
			if fmt.Sprint(rt.pulls) != "[reg/app:1 first reg/app:1 second]" {
				t.Errorf("pulls %v, want first then second", rt.pulls)
			}
			if len(creds.pods) != 1 || len(creds.pods[0].Spec.ImagePullSecrets) != 0 {
				t.Errorf("credentials asked for %v, want one pod without secrets", creds.pods)
			}

			rt.pulls, rt.pullOK = nil, func(string) bool { return false }
			if _, err := a.Pull(context.Background(), "reg/app:1"); err == nil || len(rt.pulls) != 2 || woke != 1 {
				t.Errorf("all credentials refused: err %v after %v (woken %d), want an error after two tries, no wake", err, rt.pulls, woke)
			}
			a.creds, rt.pulls, rt.pullOK = nil, nil, nil
			if _, err := a.Pull(context.Background(), "pub:1"); err != nil || fmt.Sprint(rt.pulls) != "[pub:1 <anonymous>]" {
				t.Errorf("no credentials: %v, pulls %v, want one anonymous pull", err, rt.pulls)
			}
		})
	}
}
