package images

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/runtime"
)

// GCRuntime is what the image GC asks of the runtime (runtime.Runtime has
// it all).
type GCRuntime interface {
	ListImages(ctx context.Context) ([]*runtime.Image, error)
	ListContainers(ctx context.Context, filter runtime.ContainerFilter) ([]*runtime.Container, error)
	RemoveImage(ctx context.Context, ref string) error
	ImageFsInfo(ctx context.Context) ([]runtime.FilesystemUsage, error)
}

// GCConfig wires a GC. Runtime is required.
type GCConfig struct {
	Runtime GCRuntime
	// Policy is validated by NewGC (zero value: see DefaultGCPolicy).
	Policy GCPolicy
	// Period between runs (default DefaultGCPeriod, the kubelet's 5 min).
	Period time.Duration
	// Statfs measures the image filesystem (nil: Statfs).
	Statfs StatFS
	// Clock (nil: the real clock).
	Clock clock.WithTicker
	// KeepImages are references (ID, tag or digest) never removed, e.g.
	// the sandbox (pause) image: sandboxes use it but no container
	// listing says so.
	KeepImages []string
	// NodeEvent records an event about the Node (nil: none).
	NodeEvent func(typ, reason, msg string)
	Logger    *slog.Logger
}

// GC is the kubelet's image garbage collector (image_gc_manager.go):
// it records when each image was first seen and last used by a
// container, and frees disk space by removing unused images, least
// recently used first. Create with NewGC; Run drives it. Records is safe
// for concurrent use; GarbageCollect must not run concurrently with
// itself (Run calls it from one goroutine).
type GC struct {
	cfg GCConfig
	log *slog.Logger

	mu      sync.Mutex
	records map[string]*record
}

// record is a Record plus what the last detection saw of the image.
type record struct {
	Record
	size uint64
	// protected: in use by a container, pinned, or a KeepImages image.
	protected bool
}

// candidate is an image the GC may remove.
type candidate struct {
	id   string
	size uint64
	Record
}

// NewGC validates cfg.Policy and returns a GC.
func NewGC(cfg GCConfig) (*GC, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("images: GC needs a Runtime")
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultGCPeriod
	}
	if cfg.Statfs == nil {
		cfg.Statfs = Statfs
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NodeEvent == nil {
		cfg.NodeEvent = func(string, string, string) {}
	}
	return &GC{cfg: cfg, log: cfg.Logger, records: map[string]*record{}}, nil
}

// Records returns a copy of what the GC knows of each image, by image ID
// (filled by the first detection, then every Period). Safe for
// concurrent use.
func (g *GC) Records() map[string]Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]Record, len(g.records))
	for id, r := range g.records {
		out[id] = r.Record
	}
	return out
}

// Run detects images and, if the policy is enabled, collects garbage at
// once and then every Period, until ctx is done. A failure is logged; two
// in a row record an ImageGCFailed event, as the kubelet does. Blocking;
// at steady state one ListImages, one ListContainers, one ImageFsInfo
// and one statfs per Period.
func (g *GC) Run(ctx context.Context) {
	began := g.cfg.Clock.Now()
	t := g.cfg.Clock.NewTicker(g.cfg.Period)
	defer t.Stop()
	prevFailed := false
	for {
		var err error
		if g.cfg.Policy.Enabled() {
			err = g.GarbageCollect(ctx, began)
		} else {
			_, err = g.detect(ctx, g.cfg.Clock.Now())
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && prevFailed:
			g.log.Error("image garbage collection failed multiple times in a row", "err", err)
			g.cfg.NodeEvent(v1.EventTypeWarning, ReasonImageGCFailed, err.Error())
		case err != nil:
			g.log.Error("image garbage collection failed once", "err", err)
		case prevFailed:
			g.log.Info("image garbage collection succeeded")
		}
		prevFailed = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// GarbageCollect applies the policy once (the kubelet's GarbageCollect):
// unused images not used for MaxAge go (once MaxAge has passed since
// began, the GC's start), then, if the image filesystem's usage is at or
// above the high threshold, unused images at least MinAge old go, least
// recently used first, until the low threshold is reached. Images in use
// by any container of the runtime, pinned images and KeepImages are never
// removed. Not enough to free is an error and a FreeDiskSpaceFailed
// event. Blocking.
func (g *GC) GarbageCollect(ctx context.Context, began time.Time) error {
	now := g.cfg.Clock.Now()
	order, err := g.evictionOrder(ctx, now)
	if err != nil {
		return err
	}
	order, err = g.freeOldImages(ctx, order, now, began)
	if err != nil {
		return err
	}
	fs, err := g.imageFs(ctx)
	if err != nil {
		return err
	}
	if fs.Capacity == 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		g.cfg.NodeEvent(v1.EventTypeWarning, ReasonInvalidDiskCapacity, err.Error())
		return err
	}
	capacity, available := int64(fs.Capacity), int64(min(fs.Available, fs.Capacity))
	usage := 100 - int(available*100/capacity)
	if usage < g.cfg.Policy.HighThresholdPercent {
		return nil
	}
	amount := capacity*int64(100-g.cfg.Policy.LowThresholdPercent)/100 - available
	g.log.Info("disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", usage, "highThreshold", g.cfg.Policy.HighThresholdPercent, "amountToFree", amount, "lowThreshold", g.cfg.Policy.LowThresholdPercent)
	freed, err := g.freeSpace(ctx, order, amount, now)
	if err != nil {
		return err
	}
	if freed < amount {
		err := fmt.Errorf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", amount, freed) //nolint:staticcheck // ST1005: the kubelet's wording, which the event carries
		g.cfg.NodeEvent(v1.EventTypeWarning, ReasonFreeDiskSpaceFailed, err.Error())
		return err
	}
	return nil
}

// imageFs measures the first image filesystem the runtime reports (the
// kubelet's CRI stats provider does the same).
func (g *GC) imageFs(ctx context.Context) (FsStats, error) {
	fss, err := g.cfg.Runtime.ImageFsInfo(ctx)
	if err != nil {
		return FsStats{}, fmt.Errorf("image filesystem: %w", err)
	}
	if len(fss) == 0 || fss[0].Mountpoint == "" {
		return FsStats{}, errors.New("image filesystem: the runtime reports none")
	}
	return g.cfg.Statfs(fss[0].Mountpoint)
}

// freeOldImages removes the candidates not used for longer than MaxAge
// and returns the others.
func (g *GC) freeOldImages(ctx context.Context, order []candidate, now, began time.Time) ([]candidate, error) {
	old, rest := tooOld(order, now, began, g.cfg.Policy.MaxAge)
	var errs []error
	for _, c := range old {
		if err := g.remove(ctx, c, "age"); err != nil {
			errs = append(errs, err)
			rest = append(rest, c)
		}
	}
	if len(errs) > 0 {
		return rest, fmt.Errorf("wanted to free images older than %v, encountered errors in image deletion: %w", g.cfg.Policy.MaxAge, errors.Join(errs...))
	}
	return rest, nil
}

// freeSpace removes the candidates old enough, in order, until bytes are
// freed; it returns what it freed (the removed images' sizes).
func (g *GC) freeSpace(ctx context.Context, order []candidate, bytes int64, now time.Time) (int64, error) {
	var freed int64
	var errs []error
	for _, c := range oldEnough(order, now, g.cfg.Policy.MinAge) {
		if err := g.remove(ctx, c, "space"); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += int64(c.size)
		if freed >= bytes {
			break
		}
	}
	if len(errs) > 0 {
		return freed, fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", bytes, freed, errors.Join(errs...))
	}
	return freed, nil
}

// remove removes one image and forgets its record.
func (g *GC) remove(ctx context.Context, c candidate, why string) error {
	g.log.Info("removing image to free bytes", "imageID", c.id, "size", c.size, "reason", why)
	if err := g.cfg.Runtime.RemoveImage(ctx, c.id); err != nil {
		return fmt.Errorf("remove image %s: %w", c.id, err)
	}
	g.mu.Lock()
	delete(g.records, c.id)
	g.mu.Unlock()
	return nil
}

// evictionOrder detects the images and returns the unprotected ones in
// eviction order.
func (g *GC) evictionOrder(ctx context.Context, now time.Time) ([]candidate, error) {
	recs, err := g.detect(ctx, now)
	if err != nil {
		return nil, err
	}
	return evictionOrder(recs), nil
}

// detect lists the images and all containers of the runtime (skiff's or
// not) and updates the records: new images are first detected now, used
// ones last used now, gone ones forgotten. It returns a copy of the
// records. Blocking (two CRI calls).
func (g *GC) detect(ctx context.Context, now time.Time) (map[string]*record, error) {
	imgs, err := g.cfg.Runtime.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	cs, err := g.cfg.Runtime.ListContainers(ctx, runtime.ContainerFilter{})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	used := map[string]bool{}
	for _, c := range cs {
		used[c.ImageRef] = true
		used[c.Image] = true
		if vols := c.Annotations[runtime.AnnotationImageVolumes]; vols != "" {
			for _, id := range strings.Split(vols, ",") {
				used[id] = true
			}
		}
	}
	delete(used, "")
	keep := map[string]bool{}
	for _, ref := range g.cfg.KeepImages {
		keep[ref] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.records = updateRecords(g.records, imgs, used, keep, now)
	out := make(map[string]*record, len(g.records))
	for id, r := range g.records {
		cp := *r
		out[id] = &cp
	}
	return out, nil
}

// updateRecords is detectImages' bookkeeping: recs updated for the listed
// images, used and keep holding references (IDs, tags, digests). Pure
// but for recs, which it updates and returns.
func updateRecords(recs map[string]*record, imgs []*runtime.Image, used, keep map[string]bool, now time.Time) map[string]*record {
	seen := make(map[string]bool, len(imgs))
	for _, img := range imgs {
		seen[img.ID] = true
		r, ok := recs[img.ID]
		if !ok {
			r = &record{Record: Record{FirstDetected: now}}
			recs[img.ID] = r
		}
		inUse := RefersTo(used, img)
		if inUse {
			r.LastUsed = now
		}
		r.size = img.Size
		r.protected = inUse || img.Pinned || RefersTo(keep, img)
	}
	maps.DeleteFunc(recs, func(id string, _ *record) bool { return !seen[id] })
	return recs
}

// RefersTo reports whether refs holds img's ID, one of its tags or digests.
// Pure.
func RefersTo(refs map[string]bool, img *runtime.Image) bool {
	if refs[img.ID] {
		return true
	}
	for _, s := range img.RepoTags {
		if refs[s] {
			return true
		}
	}
	for _, s := range img.RepoDigests {
		if refs[s] {
			return true
		}
	}
	return false
}

// evictionOrder returns the unprotected images, least recently used
// first, ties broken by first detection (then ID, for a stable order).
// Pure.
func evictionOrder(recs map[string]*record) []candidate {
	out := make([]candidate, 0, len(recs))
	for id, r := range recs {
		if !r.protected {
			out = append(out, candidate{id: id, size: r.size, Record: r.Record})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.LastUsed.Equal(b.LastUsed) {
			return a.LastUsed.Before(b.LastUsed)
		}
		if !a.FirstDetected.Equal(b.FirstDetected) {
			return a.FirstDetected.Before(b.FirstDetected)
		}
		return a.id < b.id
	})
	return out
}

// tooOld splits order into the images unused for longer than maxAge and
// the rest; nothing is too old while maxAge is 0 or has not passed since
// began. An image never used counts from its first detection (the kubelet
// counts from the zero time, which would expire an image pulled a moment
// before its container is created). Pure.
func tooOld(order []candidate, now, began time.Time, maxAge time.Duration) (old, rest []candidate) {
	if maxAge <= 0 || now.Sub(began) <= maxAge {
		return nil, order
	}
	for _, c := range order {
		last := c.LastUsed
		if last.IsZero() {
			last = c.FirstDetected
		}
		if now.Sub(last) > maxAge {
			old = append(old, c)
		} else {
			rest = append(rest, c)
		}
	}
	return old, rest
}

// oldEnough returns the images of order detected at least minAge ago
// (younger ones may just have been pulled for a container about to be
// created). Pure.
func oldEnough(order []candidate, now time.Time, minAge time.Duration) []candidate {
	var out []candidate
	for _, c := range order {
		if now.Sub(c.FirstDetected) >= minAge {
			out = append(out, c)
		}
	}
	return out
}
