package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// ignored resources are never monitored, as upstream's
// DefaultIgnoredResources: events are many and nobody owns them.
func ignored(gr schema.GroupResource) bool {
	return gr.Resource == "events" && (gr.Group == "" || gr.Group == "events.k8s.io")
}

// deletableResources returns the preferred resources that support
// delete, list and watch, with their kinds. On a partial discovery
// failure it returns what was found and the error.
func deletableResources(d discovery.ServerResourcesInterface) (map[schema.GroupVersionResource]schema.GroupVersionKind, error) {
	lists, err := d.ServerPreferredResources()
	if lists == nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	out := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	verbs := discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}
	for _, list := range discovery.FilteredBy(verbs, lists) {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			err = errors.Join(err, perr)
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || ignored(gv.WithResource(r.Name).GroupResource()) {
				continue
			}
			out[gv.WithResource(r.Name)] = gv.WithKind(r.Kind)
		}
	}
	return out, err
}

// monitors watch every resource and send the events to graphChanges:
// through a shared informer of the resource where shared gives one (nil
// func or nil result: none), else a metadata informer of their own. Safe
// for concurrent use; stop waits for every informer of their own.
type monitors struct {
	client       metadata.Interface
	shared       func(schema.GroupVersionResource) cache.SharedIndexInformer
	graphChanges workqueue.TypedInterface[*event]

	mu      sync.Mutex
	running map[schema.GroupVersionResource]*monitor
	wg      sync.WaitGroup
}

// monitor is one resource's: synced once its informer has delivered its
// first list to the handler; cancel stops its own informer or removes its
// handler from the shared one.
type monitor struct {
	synced cache.InformerSynced
	cancel func()
}

// sync starts monitors for resources not yet monitored and stops those
// of resources gone; their own informers run until ctx ends or stop.
func (m *monitors) sync(ctx context.Context, resources map[schema.GroupVersionResource]schema.GroupVersionKind) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running == nil {
		m.running = map[schema.GroupVersionResource]*monitor{}
	}
	for gvr, mon := range m.running {
		if _, ok := resources[gvr]; !ok {
			mon.cancel()
			delete(m.running, gvr)
		}
	}
	var errs []error
	for gvr, gvk := range resources {
		if _, ok := m.running[gvr]; ok {
			continue
		}
		mon, err := m.start(ctx, gvr, gvk)
		if err != nil {
			errs = append(errs, fmt.Errorf("monitor %s: %w", gvr, err))
			continue
		}
		m.running[gvr] = mon
	}
	return errors.Join(errs...)
}

// start monitors one resource: with a handler on its shared informer
// when there is one (as kube-controller-manager's collector shares the
// typed informers of its controllers), else with a metadata informer of
// its own, stripped to what the collector reads.
func (m *monitors) start(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) (*monitor, error) {
	if m.shared != nil {
		if inf := m.shared(gvr); inf != nil {
			reg, err := inf.AddEventHandler(m.handler(gvk))
			if err != nil {
				return nil, err
			}
			return &monitor{synced: reg.HasSynced, cancel: func() { _ = inf.RemoveEventHandler(reg) }}, nil
		}
	}
	inf := metadatainformer.NewFilteredMetadataInformer(m.client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	if err := inf.SetTransform(stripMetadata); err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(m.handler(gvk)); err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	m.wg.Go(func() { inf.RunWithContext(mctx) })
	return &monitor{synced: inf.HasSynced, cancel: cancel}, nil
}

// hasSynced: every monitor has listed its resource once.
func (m *monitors) hasSynced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.running) == 0 {
		return false
	}
	for _, mon := range m.running {
		if !mon.synced() {
			return false
		}
	}
	return true
}

// stop stops every monitor and waits for the informers of their own.
func (m *monitors) stop() {
	m.mu.Lock()
	for gvr, mon := range m.running {
		mon.cancel()
		delete(m.running, gvr)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

func (m *monitors) handler(gvk schema.GroupVersionKind) cache.ResourceEventHandler {
	send := func(t eventType, obj, old any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		o, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		ev := &event{eventType: t, obj: o, gvk: gvk}
		if oldObj, ok := old.(metav1.Object); ok {
			ev.oldObj = oldObj
		}
		m.graphChanges.Add(ev)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { send(addEvent, obj, nil) },
		UpdateFunc: func(old, obj any) { send(updateEvent, obj, old) },
		DeleteFunc: func(obj any) { send(deleteEvent, obj, nil) },
	}
}

// stripMetadata keeps only what the collector reads (identity, owners,
// finalizers, deletionTimestamp): labels, annotations and managedFields
// would cost memory in every informer's store for nothing.
func stripMetadata(obj any) (any, error) {
	p, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp, Finalizers: p.Finalizers, OwnerReferences: p.OwnerReferences,
		},
	}, nil
}
