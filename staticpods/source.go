// Package staticpods is the manifest-directory pod source, compatible with
// the kubelet's --pod-manifest-path (staticPodPath) source (checklist A.2,
// H.14, H.16): every regular, non-hidden file in one directory holds Pod
// manifests (YAML, possibly multi-document, or JSON) that become static pods
// bound to this node.
//
// The source is level-triggered: it lists the whole directory at start, on
// inotify events (after a debounce quiet period, so half-written files are
// not read) and periodically as a safety net, and hands the complete set of
// valid pods to a sink whenever that set changes.
package staticpods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults for Config.
const (
	DefaultResync   = 20 * time.Second
	DefaultDebounce = 100 * time.Millisecond
)

// Watch retry back-off while the directory is missing or cannot be watched.
const (
	minRetry = 100 * time.Millisecond
	maxRetry = 5 * time.Second
)

// Config configures a Source.
type Config struct {
	// Dir is the manifest directory. It need not exist yet: a missing
	// directory holds no pods and is watched for with back-off.
	Dir string
	// NodeName is this node's name, a DNS-1123 subdomain. It becomes
	// spec.nodeName and (lowercased) the pod name suffix, and is part of
	// each pod's UID.
	NodeName string
	// Resync is the period of the safety re-list (default 20s, as the
	// kubelet's file check frequency).
	Resync time.Duration
	// Debounce is the quiet period after the last inotify event before
	// the directory is read (default 100ms). A continuous stream of events
	// delays the read by at most 10*Debounce. When every file of a burst
	// is settled by its latest event (it left the directory, was renamed
	// into it, or its writer closed it), the quiet period is Debounce/5:
	// such a file cannot be half-written, a pod whose manifest is deleted
	// should get its SIGTERM at once (issue 5, reaction under 100 ms) and
	// one written as a manifest should start at once (startup), yet a
	// script's `rm f; cp g f` still reads as an edit. When every file's
	// latest event is its rename into the directory (a manifest written
	// elsewhere and moved in, whole; `rm f; mv tmp f` included), it is
	// Debounce/50: nothing about such a burst can be half-done, and the
	// 2 ms (at the default) only gather a batch of renames into one read
	// (issue 35: the 20 ms were most of skiff's lead over the bare CRI
	// calls before the sandbox). A file created or written and not yet
	// closed keeps the full Debounce.
	Debounce time.Duration
	// Logger receives the source's logs (nil: discard).
	Logger *slog.Logger
	// Objects, if set, receives the directory's ConfigMap and Secret
	// documents (see parseObjects): the complete valid set after every
	// listing, always before the sink hears of pods that may use them.
	// nil: such documents are decoded and validated, and then dropped.
	Objects ObjectStore
}

// Source watches a manifest directory. Create it with New and start it with
// Run; Errors may be called from any goroutine.
//
// Per-file rules:
//   - names starting with "." and editor temporaries are ignored (see
//     ignoredName), as are subdirectories; every other regular file (any
//     or no extension; symlinks are followed) is read, up to 4 MiB;
//   - a file may also hold ConfigMaps and Secrets (see Config.Objects);
//   - a file that fails to decode or validate contributes no pods and no
//     objects; its error (naming the file and field path) is logged once
//     per distinct error and reported by Errors. Pods and objects of other
//     files are unaffected;
//   - when a previously good file turns bad its pods are removed, as in the
//     kubelet, which keeps nothing from an unparseable file;
//   - when two files define the same namespace/name (or UID), the first in
//     file name order wins and the later file is rejected with an error;
//     the same holds for two ConfigMaps (or Secrets) of one namespace/name.
//
// Static pod identity follows the kubelet (see applyStaticDefaults and
// staticPodUID): the UID depends only on node name, file path and content.
type Source struct {
	cfg Config
	log *slog.Logger

	// cache is owned by the Run goroutine.
	cache map[string]fileResult

	mu   sync.Mutex
	errs map[string]error // path -> current error
}

// New checks cfg, fills defaults and returns a Source. It does not touch the
// file system.
func New(cfg Config) (*Source, error) {
	if cfg.Dir == "" {
		return nil, errors.New("staticpods: Config.Dir is required")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("staticpods: Config.NodeName is required")
	}
	if msgs := validation.IsDNS1123Subdomain(cfg.NodeName); len(msgs) > 0 {
		return nil, fmt.Errorf("staticpods: Config.NodeName %q is not a valid node name: %s", cfg.NodeName, msgs[0])
	}
	if cfg.Resync < 0 || cfg.Debounce < 0 {
		return nil, errors.New("staticpods: Config.Resync and Config.Debounce must not be negative")
	}
	if cfg.Resync == 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Debounce == 0 {
		cfg.Debounce = DefaultDebounce
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Dir = filepath.Clean(cfg.Dir)
	return &Source{
		cfg:   cfg,
		log:   cfg.Logger.With("component", "staticpods", "dir", cfg.Dir),
		cache: map[string]fileResult{},
		errs:  map[string]error{},
	}, nil
}

// Errors returns the current per-file errors, keyed by file path. The map is
// a copy. Safe for concurrent use.
func (s *Source) Errors() map[string]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.errs)
}

// Run watches the directory until ctx is done, then returns nil; it returns
// an error only if the watcher cannot be created. It calls sink, always from
// Run's goroutine and never concurrently, with the complete current set of
// valid pods: once after the initial listing (even if empty: the source is
// then synced) and then each time the set changes (pods added, removed or
// changed). The pods passed to sink are copies that sink may keep or modify.
// Run must be called at most once.
func (s *Source) Run(ctx context.Context, sink func(pods []*v1.Pod)) error {
	w, err := newDirWatcher()
	if err != nil {
		return fmt.Errorf("staticpods: creating inotify watcher: %w", err)
	}
	defer w.Close()
	l := &loop{s: s, w: w, sink: sink, backoff: minRetry}
	l.watching = l.watch()
	l.sync(true)
	return l.run(ctx)
}

// loop is the state of one Run.
type loop struct {
	s        *Source
	w        *dirWatcher
	sink     func([]*v1.Pod)
	watching bool
	backoff  time.Duration
	lastSig  string

	debounce     *time.Timer
	armed        bool
	burst        map[string]settling // file -> its latest event's, for the pending burst
	pendingSince time.Time
	retry        *time.Timer
}

func (l *loop) run(ctx context.Context) error {
	resync := time.NewTicker(l.s.cfg.Resync)
	defer resync.Stop()
	l.debounce = time.NewTimer(time.Hour)
	l.debounce.Stop()
	defer l.debounce.Stop()
	l.retry = time.NewTimer(l.backoff)
	if l.watching {
		l.retry.Stop()
	}
	defer l.retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-l.w.Events:
			if !ok {
				return errors.New("staticpods: inotify watcher closed")
			}
			l.onEvent(ev)
		case err, ok := <-l.w.Errors:
			if !ok {
				return errors.New("staticpods: inotify watcher closed")
			}
			l.s.log.Warn("inotify error; re-listing", "err", err)
			l.arm("", unsettled)
		case <-l.debounce.C:
			l.armed = false
			l.sync(false)
		case <-l.retry.C:
			l.onRetry()
		case <-resync.C:
			if !l.armed { // a pending debounce will re-list anyway
				l.sync(false)
			}
		}
	}
}

// onEvent handles one inotify event.
func (l *loop) onEvent(ev dirEvent) {
	if filepath.Clean(ev.Name) == l.s.cfg.Dir {
		if dirGone(ev) {
			l.s.log.Info("manifest directory removed or renamed; waiting for it to reappear")
			_ = l.w.Remove() // the watch may already be gone
			l.watching = false
			l.backoff = minRetry
			l.retry.Reset(l.backoff)
			l.arm("", unsettled)
		}
		return
	}
	if ignoredName(filepath.Base(ev.Name)) {
		return
	}
	l.arm(ev.Name, fileSettling(ev))
}

// onRetry tries again to watch the directory.
func (l *loop) onRetry() {
	if l.watching = l.watch(); l.watching {
		l.backoff = minRetry
		l.arm("", unsettled) // files may have appeared while unwatched
		return
	}
	l.backoff = min(2*l.backoff, maxRetry)
	l.retry.Reset(l.backoff)
}

// arm starts or extends the debounce quiet period, but never delays the
// read more than 10*Debounce after the first event of a burst. file is the
// event's file ("" for anything else: unsettled) and s what the event says
// of it (see fileSettling); the burst's quiet period is its least settled
// file's (see quiet).
func (l *loop) arm(file string, s settling) {
	now := time.Now()
	if !l.armed {
		l.armed, l.pendingSince, l.burst = true, now, map[string]settling{}
	}
	l.burst[file] = s
	if now.Sub(l.pendingSince) < 10*l.s.cfg.Debounce {
		l.debounce.Reset(l.quiet())
	}
}

// quiet is the quiet period of the pending burst (see Config.Debounce):
// Debounce while a file of it is unsettled, else Debounce/5 while one only
// settled, else (every file arrived whole) Debounce/50. Pure.
func (l *loop) quiet() time.Duration {
	least := arrivedWhole
	for _, s := range l.burst {
		least = min(least, s)
	}
	switch least {
	case unsettled:
		return l.s.cfg.Debounce
	case settledFile:
		return l.s.cfg.Debounce / 5
	default:
		return l.s.cfg.Debounce / 50
	}
}

// watch adds the inotify watch on the directory; false if it is missing or
// cannot be watched (the caller retries with back-off).
func (l *loop) watch() bool {
	if err := l.w.Add(l.s.cfg.Dir); err != nil {
		l.s.log.Debug("cannot watch manifest directory yet", "err", err)
		return false
	}
	return true
}

// sync re-lists the directory, records errors and calls the sink if the set
// of pods changed (or always, when initial).
func (l *loop) sync(initial bool) {
	snap, err := l.s.relist()
	if err != nil {
		l.s.log.Error("cannot list manifest directory; keeping the current pods", "err", err)
		if !initial {
			return
		}
		snap = snapshot{errs: map[string]error{}}
	}
	l.s.recordErrors(snap.errs)
	if l.s.cfg.Objects != nil {
		l.s.cfg.Objects.Replace(snap.configMaps, snap.secrets)
	}
	if !initial && snap.signature == l.lastSig {
		return
	}
	l.lastSig = snap.signature
	out := make([]*v1.Pod, len(snap.pods))
	for i, p := range snap.pods {
		out[i] = p.DeepCopy()
	}
	l.sink(out)
}

// recordErrors publishes the per-file errors and logs each new or changed
// one once, and each resolved one.
func (s *Source) recordErrors(errs map[string]error) {
	s.mu.Lock()
	prev := s.errs
	s.errs = errs
	s.mu.Unlock()
	for path, err := range errs {
		if old, ok := prev[path]; !ok || old.Error() != err.Error() {
			s.log.Error("rejected static pod manifest", "path", path, "err", err)
		}
	}
	for path := range prev {
		if _, ok := errs[path]; !ok {
			s.log.Info("static pod manifest no longer in error", "path", path)
		}
	}
}
