// Package garbagecollector is the shim's garbage collector: upstream's
// pkg/controller/garbagecollector (kubernetes v1.34) re-implemented
// compactly over metadata informers of every served resource. It deletes
// dependents whose owners are all gone, propagates foreground deletion
// (removing the foregroundDeletion finalizer once no blocking dependent
// remains), orphans dependents (removing the orphan finalizer after), and
// reports owner references to namespaced owners outside the dependent's
// namespace (Warning event OwnerRefInvalidNamespace).
package garbagecollector

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// Config holds the collector's dependencies.
type Config struct {
	// Metadata reads, patches and deletes objects (the loopback client).
	Metadata metadata.Interface
	// Discovery lists the served resources; not the one behind Mapper
	// (resetting the mapper would invalidate it needlessly).
	Discovery discovery.ServerResourcesInterface
	// Mapper maps the apiVersion and kind of an owner reference to its
	// resource and scope; reset when discovery reports a change.
	Mapper meta.RESTMapper
	// Shared, when set, returns an informer of a whole resource that the
	// collector may share instead of starting a metadata informer of its
	// own (running, or started by Shared), or nil. The collector adds a
	// handler to it and removes it when it stops monitoring.
	Shared func(schema.GroupVersionResource) cache.SharedIndexInformer
	// Recorder records the OwnerRefInvalidNamespace events.
	Recorder record.EventRecorder
	// Log: default slog.Default().
	Log *slog.Logger
	// Workers per queue: default 2.
	Workers int
	// SyncPeriod between discoveries: default 30 s.
	SyncPeriod time.Duration
	// InitialSyncTimeout bounds the wait for the informers' first list
	// before the workers start: default 30 s.
	InitialSyncTimeout time.Duration
}

// GarbageCollector collects dependents whose owners are gone. New
// prepares it; Run runs it once. Its state is internal: the graph is
// written by one goroutine, the workers read it under per-node locks.
type GarbageCollector struct {
	cfg             Config
	log             *slog.Logger
	metadata        metadata.Interface
	mapper          meta.RESTMapper
	graph           *graph
	builder         *graphBuilder
	monitors        *monitors
	absent          *referenceCache
	attemptToDelete workqueue.TypedRateLimitingInterface[*node]
	attemptToOrphan workqueue.TypedRateLimitingInterface[*node]
}

// absentCacheSize is upstream's (NewReferenceCache(500)).
const absentCacheSize = 500

// New returns a collector; nothing runs before Run.
func New(cfg Config) *GarbageCollector {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.SyncPeriod <= 0 {
		cfg.SyncPeriod = 30 * time.Second
	}
	if cfg.InitialSyncTimeout <= 0 {
		cfg.InitialSyncTimeout = 30 * time.Second
	}
	queue := func(name string) workqueue.TypedRateLimitingInterface[*node] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*node](),
			workqueue.TypedRateLimitingQueueConfig[*node]{Name: name})
	}
	gc := &GarbageCollector{
		cfg:             cfg,
		log:             cfg.Log,
		metadata:        cfg.Metadata,
		mapper:          cfg.Mapper,
		graph:           newGraph(),
		absent:          newReferenceCache(absentCacheSize),
		attemptToDelete: queue("garbage_collector_attempt_to_delete"),
		attemptToOrphan: queue("garbage_collector_attempt_to_orphan"),
	}
	changes := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[*event]{Name: "garbage_collector_graph_changes"})
	gc.builder = &graphBuilder{log: cfg.Log, graph: gc.graph, graphChanges: changes, attemptToDelete: gc.attemptToDelete,
		attemptToOrphan: gc.attemptToOrphan, absent: gc.absent, recorder: cfg.Recorder}
	gc.monitors = &monitors{client: cfg.Metadata, shared: cfg.Shared, graphChanges: changes}
	return gc
}

// Run discovers the resources, starts their informers, the graph builder
// and the workers, and re-discovers every SyncPeriod. It blocks until ctx
// ends, then stops everything it started and waits for it. Call it once.
func (gc *GarbageCollector) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer func() {
		gc.builder.graphChanges.ShutDown()
		gc.attemptToDelete.ShutDown()
		gc.attemptToOrphan.ShutDown()
		gc.monitors.stop()
		wg.Wait()
	}()
	wg.Go(func() {
		for gc.builder.processGraphChanges() {
		}
	})
	known := gc.syncResources(ctx, nil)
	syncCtx, cancel := context.WithTimeout(ctx, gc.cfg.InitialSyncTimeout)
	if !waitFor(syncCtx, gc.monitors.hasSynced) {
		gc.log.Info("garbage collector: not all informers synced, proceeding")
	}
	cancel()
	for range gc.cfg.Workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for gc.processAttemptToDelete(ctx) {
				}
			}, time.Second)
		})
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for gc.processAttemptToOrphan(ctx) {
				}
			}, time.Second)
		})
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) { known = gc.syncResources(ctx, known) }, gc.cfg.SyncPeriod)
}

// syncResources re-discovers the deletable resources and, if they
// changed from known, resets the mapper and re-syncs the informers. It
// returns the resources now monitored.
func (gc *GarbageCollector) syncResources(ctx context.Context, known map[schema.GroupVersionResource]schema.GroupVersionKind) map[schema.GroupVersionResource]schema.GroupVersionKind {
	found, err := deletableResources(gc.cfg.Discovery)
	if err != nil {
		gc.log.Info("garbage collector: discovery", "err", err)
	}
	if len(found) == 0 {
		return known
	}
	if err != nil {
		// A partial failure: keep monitoring what discovery missed this
		// time (upstream keeps the failed groups' resources only).
		for gvr, gvk := range known {
			if _, ok := found[gvr]; !ok {
				found[gvr] = gvk
			}
		}
	}
	if maps.Equal(found, known) {
		return known
	}
	meta.MaybeResetRESTMapper(gc.mapper)
	if err := gc.monitors.sync(ctx, found); err != nil {
		gc.log.Info("garbage collector: monitors", "err", err)
	}
	return found
}

// waitFor polls cond every 100 ms until it holds (true) or ctx ends.
func waitFor(ctx context.Context, cond func() bool) bool {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	return err == nil
}
