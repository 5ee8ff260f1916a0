package server

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/skiffnode/skiff/shim/controllers/garbagecollector"
)

// controllers runs the shim's controllers (today the garbage collector)
// against the shim itself, through the loopback client, from a post-start
// hook. Each runs until the hook's context ends (the server stops); wait
// returns once all have returned. Safe for concurrent use.
type controllers struct {
	wg sync.WaitGroup
}

// startHook is the post-start hook "skiff-controllers": it builds the
// controllers and starts them; it does not block.
func (c *controllers) startHook(hc genericapiserver.PostStartHookContext) error {
	gc, broadcaster, err := newGarbageCollector(hc)
	if err != nil {
		return fmt.Errorf("garbage collector: %w", err)
	}
	c.wg.Go(func() {
		defer broadcaster.Shutdown()
		gc.Run(hc.Context)
	})
	return nil
}

// wait blocks until every controller has returned.
func (c *controllers) wait() { c.wg.Wait() }

// newGarbageCollector wires the collector to the loopback connection: a
// metadata client, discovery (one client for the periodic re-discovery,
// a cached one behind the REST mapper, as upstream), and an event
// recorder writing core/v1 events. The broadcaster must be shut down.
func newGarbageCollector(hc genericapiserver.PostStartHookContext) (*garbagecollector.GarbageCollector, record.EventBroadcaster, error) {
	cfg := hc.LoopbackClientConfig
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	mapperDisco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(hc.Context))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "garbage-collector-controller"})
	gc := garbagecollector.New(garbagecollector.Config{
		Metadata:  meta,
		Discovery: disco,
		Mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(mapperDisco)),
		Recorder:  recorder,
	})
	return gc, broadcaster, nil
}
