package server

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffnode/skiff/shim/controllers/deployment"
	"github.com/skiffnode/skiff/shim/controllers/garbagecollector"
	nscontroller "github.com/skiffnode/skiff/shim/controllers/namespace"
	"github.com/skiffnode/skiff/shim/controllers/nsobjects"
	"github.com/skiffnode/skiff/shim/controllers/replicaset"
)

// Workers per controller: few namespaces change at once on one node.
const (
	namespaceWorkers  = 2
	nsObjectWorkers   = 1
	replicaSetWorkers = 2
	deploymentWorkers = 2
)

// controllers are the shim's own controllers, built before the server
// starts (so that their informers are in the shared factory when
// genericapiserver starts it) and run by a post-start hook. Server.Run
// waits for them after the server has stopped.
type controllers struct {
	runs      []func(ctx context.Context)
	informers informers.SharedInformerFactory // shared with the garbage collector

	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// newControllers builds the namespace controller, the per-namespace
// objects (default ServiceAccount, kube-root-ca.crt with caPEM) and the
// ReplicaSet and Deployment controllers, talking to the shim through
// cc's loopback client, and those extra builds (Options.Controllers; nil:
// none) with a copy of cc.
func newControllers(cc ControllerContext, caPEM []byte, extra func(ControllerContext) ([]func(context.Context), error)) (*controllers, error) {
	client, factory := cc.Client, cc.Informers
	meta, err := metadata.NewForConfig(cc.Config)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	namespaces := factory.Core().V1().Namespaces()
	ns, err := nscontroller.New(nscontroller.Config{
		Client:     client,
		Metadata:   meta,
		Discover:   client.Discovery().ServerPreferredNamespacedResources,
		Namespaces: namespaces,
	})
	if err != nil {
		return nil, err
	}
	c := &controllers{informers: factory, runs: []func(context.Context){
		func(ctx context.Context) { ns.Run(ctx, namespaceWorkers) },
	}}
	for _, spec := range []nsobjects.Spec{nsobjects.DefaultServiceAccount(client), nsobjects.RootCA(client, caPEM)} {
		ctrl, err := nsobjects.New(spec, namespaces, nil)
		if err != nil {
			return nil, err
		}
		c.runs = append(c.runs, func(ctx context.Context) { ctrl.Run(ctx, nsObjectWorkers) })
	}
	apps, err := newAppsControllers(client, factory)
	if err != nil {
		return nil, err
	}
	c.runs = append(c.runs, apps...)
	if extra != nil {
		cc.Config = rest.CopyConfig(cc.Config)
		more, err := extra(cc)
		if err != nil {
			return nil, fmt.Errorf("extra controllers: %w", err)
		}
		c.runs = append(c.runs, more...)
	}
	return c, nil
}

// newAppsControllers builds the ReplicaSet and Deployment controllers on
// the shared factory's pods, replicasets and deployments informers, with
// one event broadcaster, which records from the first run and is shut
// down when the context ends.
func newAppsControllers(client kubernetes.Interface, factory informers.SharedInformerFactory) ([]func(context.Context), error) {
	broadcaster := record.NewBroadcaster()
	recorder := func(component string) record.EventRecorder {
		return broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: component})
	}
	rs, err := replicaset.New(replicaset.Config{
		Client:      client,
		Pods:        factory.Core().V1().Pods(),
		ReplicaSets: factory.Apps().V1().ReplicaSets(),
		Recorder:    recorder("replicaset-controller"),
	})
	if err != nil {
		return nil, err
	}
	d, err := deployment.New(deployment.Config{
		Client:      client,
		Deployments: factory.Apps().V1().Deployments(),
		ReplicaSets: factory.Apps().V1().ReplicaSets(),
		Pods:        factory.Core().V1().Pods(),
		Recorder:    recorder("deployment-controller"),
	})
	if err != nil {
		return nil, err
	}
	return []func(context.Context){
		func(ctx context.Context) {
			broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
			<-ctx.Done()
			broadcaster.Shutdown()
		},
		func(ctx context.Context) { rs.Run(ctx, replicaSetWorkers) },
		func(ctx context.Context) { d.Run(ctx, deploymentWorkers) },
	}, nil
}

// start is the post-start hook: it builds the garbage collector (it
// discovers resources, so it needs the server serving) and runs it and
// every other controller until the hook's context (the server's) ends.
// Nothing starts after wait.
func (c *controllers) start(hc genericapiserver.PostStartHookContext) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	gc, broadcaster, err := newGarbageCollector(hc, c.informers)
	if err != nil {
		return fmt.Errorf("garbage collector: %w", err)
	}
	c.wg.Go(func() {
		defer broadcaster.Shutdown()
		gc.Run(hc.Context)
	})
	for _, run := range c.runs {
		c.wg.Go(func() { run(hc) })
	}
	return nil
}

// wait returns once every controller started has returned; their context
// must be done or ending.
func (c *controllers) wait() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.wg.Wait()
}

// newGarbageCollector wires the collector to the loopback connection: a
// metadata client, discovery (one client for the periodic re-discovery,
// a cached one behind the REST mapper, as upstream), an event recorder
// writing core/v1 events, and the shared factory's informers for the
// kinds it knows (sharedInformer). The broadcaster must be shut down.
func newGarbageCollector(hc genericapiserver.PostStartHookContext, factory informers.SharedInformerFactory) (*garbagecollector.GarbageCollector, record.EventBroadcaster, error) {
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
		Shared:    sharedInformer(hc.Context, factory),
		Recorder:  recorder,
	})
	return gc, broadcaster, nil
}

// metadataOnly are kinds whose objects carry data (a Helm release is a
// Secret of up to ~1 MiB) that only the collector would watch: it keeps
// their metadata alone, as before the informers were shared.
var metadataOnly = []schema.GroupResource{{Resource: "secrets"}, {Resource: "configmaps"}}

// sharedInformer gives the garbage collector the shared factory's
// informer of every kind the factory knows but metadataOnly, started if
// it is new, as kube-controller-manager's ObjectOrMetadataInformerFactory
// gives its collector: one watch per resource instead of a typed one for
// the controllers and a metadata one for the collector (shim/NOTES.md,
// Measurements, fifth pass). Others (custom resources): nil, so the
// collector watches their metadata itself.
func sharedInformer(ctx context.Context, factory informers.SharedInformerFactory) func(schema.GroupVersionResource) cache.SharedIndexInformer {
	return func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
		if slices.Contains(metadataOnly, gvr.GroupResource()) {
			return nil
		}
		generic, err := factory.ForResource(gvr)
		if err != nil {
			return nil
		}
		inf := generic.Informer()
		factory.Start(ctx.Done())
		return inf
	}
}
