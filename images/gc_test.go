package images

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/internal/clocktest"
	"github.com/skiffnode/skiff/runtime"
)

// gcFakeImages is the GC's port over a map of images and a container list.
type gcFakeImages struct {
	mu         sync.Mutex
	images     []*runtime.Image
	containers []*runtime.Container
	removed    []string
	failRemove map[string]bool
	fsErr      error
	calls      int
}

func (f *gcFakeImages) ListImages(context.Context) ([]*runtime.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	out := make([]*runtime.Image, 0, len(f.images))
	for _, img := range f.images {
		cp := *img
		out = append(out, &cp)
	}
	return out, nil
}

func (f *gcFakeImages) ListContainers(_ context.Context, filter runtime.ContainerFilter) ([]*runtime.Container, error) {
	if len(filter.Labels) > 0 || filter.State != nil || filter.SandboxID != "" {
		return nil, errors.New("the image GC must list all containers")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.containers), nil
}

func (f *gcFakeImages) RemoveImage(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRemove[ref] {
		return errors.New("image is busy")
	}
	f.removed = append(f.removed, ref)
	f.images = slices.DeleteFunc(f.images, func(img *runtime.Image) bool { return img.ID == ref })
	return nil
}

func (f *gcFakeImages) ImageFsInfo(context.Context) ([]runtime.FilesystemUsage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fsErr != nil {
		return nil, f.fsErr
	}
	return []runtime.FilesystemUsage{{Mountpoint: "/var/lib/containerd"}}, nil
}

func (f *gcFakeImages) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type event struct{ typ, reason, msg string }

// gcImage is one image of a table case: its age and last use relative to
// the test's now (lastUsed 0: never used).
type gcImage struct {
	id             string
	size           uint64
	detected, used time.Duration
	tags           []string
	pinned         bool
}

const mib = 1 << 20

var quiet = slog.New(slog.DiscardHandler)

var gcT0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func TestGarbageCollect_F2_F4(t *testing.T) {
	pause := "registry.k8s.io/pause:3.10"
	// Disk: 1000 MiB, 100 MiB available: usage 90%. To reach 80% the GC
	// frees 1000*20/100 - 100 = 100 MiB.
	full := FsStats{Capacity: 1000 * mib, Available: 100 * mib}
	imgs := []gcImage{
		{id: "sha256:lru", size: 60 * mib, detected: time.Hour, used: 50 * time.Minute},
		{id: "sha256:never", size: 10 * mib, detected: 2 * time.Hour},
		{id: "sha256:recent", size: 80 * mib, detected: time.Hour, used: 10 * time.Minute},
		{id: "sha256:newest", size: 500 * mib, detected: time.Hour, used: time.Minute},
		{id: "sha256:inuse", size: 900 * mib, detected: time.Hour, used: 30 * time.Minute},
		{id: "sha256:bytag", size: 900 * mib, detected: time.Hour, tags: []string{"skiff.test/busybox:1.36"}},
		{id: "sha256:pinned", size: 900 * mib, detected: time.Hour, pinned: true},
		{id: "sha256:pause", size: 900 * mib, detected: time.Hour, tags: []string{pause}},
		{id: "sha256:young", size: 900 * mib, detected: time.Minute},
		{id: "sha256:volume", size: 900 * mib, detected: 3 * time.Hour},
	}
	containers := []*runtime.Container{
		{ID: "c1", Image: "whatever", ImageRef: "sha256:inuse", State: runtime.ContainerExited},
		{ID: "c2", Image: "skiff.test/busybox:1.36", ImageRef: "", State: runtime.ContainerRunning},
		// Mounts sha256:volume as an image volume: never removed either.
		{ID: "c3", Image: "x", ImageRef: "sha256:x", State: runtime.ContainerRunning,
			Annotations: map[string]string{runtime.AnnotationImageVolumes: "sha256:other,sha256:volume"}},
	}
	tests := []struct {
		name        string
		policy      GCPolicy
		fs          FsStats
		began       time.Duration // before now
		want        []string
		wantErr     string
		wantEvent   string
		failRemoval string
	}{
		{
			name: "under the high threshold nothing goes", policy: DefaultGCPolicy(),
			fs: FsStats{Capacity: 1000 * mib, Available: 160 * mib}, // 84%
		},
		{
			name:   "at the high threshold: least recently used first, never used before used, down to the low threshold",
			policy: DefaultGCPolicy(), fs: FsStats{Capacity: 1000 * mib, Available: 150 * mib}, // 85%: free 50 MiB
			want: []string{"sha256:never", "sha256:lru"},
		},
		{
			name: "over: stops once enough is freed", policy: DefaultGCPolicy(), fs: full,
			want: []string{"sha256:never", "sha256:lru", "sha256:recent"},
		},
		{
			name:   "in use, pinned, pause and young images are never removed, and not enough is an event",
			policy: GCPolicy{HighThresholdPercent: 1, LowThresholdPercent: 0, MinAge: 2 * time.Minute}, fs: full,
			want:      []string{"sha256:never", "sha256:lru", "sha256:recent", "sha256:newest"},
			wantErr:   "Attempted to free 943718400 bytes, but only found 681574400 bytes eligible to free.",
			wantEvent: "FreeDiskSpaceFailed Failed to garbage collect required amount of images. Attempted to free 943718400 bytes, but only found 681574400 bytes eligible to free.",
		},
		{
			name: "minimum age 0: even a just detected image goes", policy: GCPolicy{HighThresholdPercent: 1}, fs: full,
			want: []string{"sha256:never", "sha256:young"},
		},
		{
			name:   "maximum age removes unused images regardless of disk, after it passed since the start",
			policy: GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute, MaxAge: 20 * time.Minute},
			fs:     FsStats{Capacity: 1000 * mib, Available: 900 * mib}, began: 21 * time.Minute,
			want: []string{"sha256:never", "sha256:lru"},
		},
		{
			name:   "maximum age waits until it has passed since the GC started",
			policy: GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 20 * time.Minute},
			fs:     FsStats{Capacity: 1000 * mib, Available: 900 * mib}, began: 20 * time.Minute,
		},
		{
			name: "a failed removal is skipped and reported", policy: DefaultGCPolicy(), fs: full, failRemoval: "sha256:never",
			want:    []string{"sha256:lru", "sha256:recent"},
			wantErr: "image is busy",
		},
		{
			name: "zero capacity", policy: DefaultGCPolicy(), fs: FsStats{},
			wantErr: "invalid capacity 0 on image filesystem", wantEvent: "InvalidDiskCapacity invalid capacity 0 on image filesystem",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(gcT0)
			rt := &gcFakeImages{containers: containers, failRemove: map[string]bool{tc.failRemoval: true}}
			var events []string
			g, err := NewGC(GCConfig{
				Runtime: rt, Policy: tc.policy, Clock: clk, KeepImages: []string{pause}, Logger: quiet,
				Statfs:    func(string) (FsStats, error) { return tc.fs, nil },
				NodeEvent: func(typ, reason, msg string) { events = append(events, reason+" "+msg) },
			})
			if err != nil {
				t.Fatal(err)
			}
			seed(g, rt, imgs)
			err = g.GarbageCollect(context.Background(), gcT0.Add(-tc.began))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if !slices.Equal(rt.removed, tc.want) {
				t.Errorf("removed %v, want %v", rt.removed, tc.want)
			}
			if tc.wantEvent == "" && len(events) > 0 || tc.wantEvent != "" && !slices.Equal(events, []string{tc.wantEvent}) {
				t.Errorf("events %q, want %q", events, tc.wantEvent)
			}
			recs := g.Records()
			for _, id := range rt.removed {
				if _, ok := recs[id]; ok {
					t.Errorf("removed image %s still has a record", id)
				}
			}
		})
	}
}

// seed makes the runtime hold imgs and the GC's records their ages.
func seed(g *GC, rt *gcFakeImages, imgs []gcImage) {
	for _, im := range imgs {
		rt.images = append(rt.images, &runtime.Image{ID: im.id, Size: im.size, RepoTags: im.tags, Pinned: im.pinned})
		r := &record{Record: Record{FirstDetected: gcT0.Add(-im.detected)}}
		if im.used > 0 {
			r.LastUsed = gcT0.Add(-im.used)
		}
		g.records[im.id] = r
	}
}

func TestDetectRecords(t *testing.T) {
	clk := clocktesting.NewFakeClock(gcT0)
	rt := &gcFakeImages{
		images: []*runtime.Image{
			{ID: "sha256:a", RepoDigests: []string{"reg/a@sha256:d"}},
			{ID: "sha256:b"},
		},
		containers: []*runtime.Container{{ID: "c", ImageRef: "reg/a@sha256:d"}},
	}
	g, err := NewGC(GCConfig{Runtime: rt, Policy: DefaultGCPolicy(), Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.detect(context.Background(), clk.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	rt.containers = nil
	rt.images = append(rt.images[:1], &runtime.Image{ID: "sha256:c"})
	if _, err := g.detect(context.Background(), clk.Now()); err != nil {
		t.Fatal(err)
	}
	want := map[string]Record{
		"sha256:a": {FirstDetected: gcT0, LastUsed: gcT0},
		"sha256:c": {FirstDetected: gcT0.Add(time.Minute)},
	}
	got := g.Records()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records %v, want %v", got, want)
	}
	got["sha256:a"] = Record{}
	if g.Records()["sha256:a"].LastUsed.IsZero() {
		t.Error("Records returned the GC's own map")
	}
}

func TestGCPolicyValidate_F3(t *testing.T) {
	tests := []struct {
		name    string
		p       GCPolicy
		wantErr string
	}{
		{name: "defaults", p: DefaultGCPolicy()},
		{name: "high 100 disables", p: GCPolicy{HighThresholdPercent: 100, LowThresholdPercent: 80}},
		{name: "e2e style", p: GCPolicy{HighThresholdPercent: 1, LowThresholdPercent: 0}},
		{name: "high over 100", p: GCPolicy{HighThresholdPercent: 101, LowThresholdPercent: 80}, wantErr: "(--image-gc-high-threshold) 101 must be between 0 and 100, inclusive"},
		{name: "low negative", p: GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: -1}, wantErr: "(--image-gc-low-threshold) -1 must be between 0 and 100, inclusive"},
		{name: "low equal to high", p: GCPolicy{HighThresholdPercent: 80, LowThresholdPercent: 80}, wantErr: "imageGCLowThresholdPercent (--image-gc-low-threshold) 80 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 80"},
		{name: "max age not above min age", p: GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute, MaxAge: 2 * time.Minute}, wantErr: "imageMaximumGCAge 2m0s must be greater than imageMinimumGCAge 2m0s"},
		{name: "negative max age", p: GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: -time.Second}, wantErr: "imageMaximumGCAge -1s must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
	if (GCPolicy{HighThresholdPercent: 100, LowThresholdPercent: 80}).Enabled() {
		t.Error("high threshold 100 without a maximum age must disable the GC")
	}
	if !(GCPolicy{HighThresholdPercent: 100, LowThresholdPercent: 80, MaxAge: time.Hour}).Enabled() {
		t.Error("a maximum age must enable the GC")
	}
}

// TestRunEventOnRepeatedFailure_F1: Run collects at once and then every
// period, and records ImageGCFailed only for the second failure in a row.
func TestRunEventOnRepeatedFailure_F1(t *testing.T) {
	clk := clocktest.New(gcT0)
	rt := &gcFakeImages{fsErr: errors.New("no fs")}
	var mu sync.Mutex
	var events []event
	g, err := NewGC(GCConfig{
		Runtime: rt, Policy: DefaultGCPolicy(), Clock: clk, Logger: quiet,
		NodeEvent: func(typ, reason, msg string) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, event{typ, reason, msg})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return rt.callCount() == 1 && clk.HasWaiters() })
	mu.Lock()
	if len(events) != 0 {
		t.Errorf("events after one failure: %v", events)
	}
	mu.Unlock()
	// Nothing the loop waits for is due before the period: stepping short
	// of it can wake nothing (and nothing ran at the step).
	if next, ok := clk.NextIn(); !ok || next != DefaultGCPeriod {
		t.Fatalf("the loop's next wake-up in %v (any: %t), want the period %v", next, ok, DefaultGCPeriod)
	}
	clk.Step(DefaultGCPeriod - time.Second)
	if n := rt.callCount(); n != 1 {
		t.Fatalf("%d runs before the period passed", n)
	}
	clk.Step(time.Second)
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if ev := events[0]; ev.typ != "Warning" || ev.reason != ReasonImageGCFailed || !strings.Contains(ev.msg, "no fs") {
		t.Errorf("event %+v, want a Warning ImageGCFailed about the failure", ev)
	}
}

// waitFor polls cond (what a goroutine under test does on a fake clock's
// step) with a real-time guard.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
