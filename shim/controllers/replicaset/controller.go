// Package replicaset is the ReplicaSet controller (upstream's
// pkg/controller/replicaset, v1.34, re-implemented compactly): it keeps
// spec.replicas active pods made from the template, adopting orphans the
// selector matches and releasing pods it no longer does, and reports
// status. Pods are created with the ReplicaSet as controller and
// blockOwnerDeletion (the garbage collector deletes them with it).
package replicaset

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/shim/controllers/controllerref"
	"github.com/skiffnode/skiff/shim/controllers/worker"
)

// burstReplicas caps the pods created or deleted in one sync (upstream's
// BurstReplicas).
const burstReplicas = 500

// Config are the controller's dependencies.
type Config struct {
	Client      kubernetes.Interface
	Pods        coreinformers.PodInformer
	ReplicaSets appsinformers.ReplicaSetInformer
	// Recorder gets the SuccessfulCreate/SuccessfulDelete events; nil: none.
	Recorder record.EventRecorder
	// Clock drives the queue, expectations and availability; nil: real.
	Clock clock.WithTicker
}

// Controller is the ReplicaSet controller.
type Controller struct {
	client       kubernetes.Interface
	pods         corelisters.PodLister
	rsLister     appslisters.ReplicaSetLister
	synced       []cache.InformerSynced
	recorder     record.EventRecorder
	clock        clock.WithTicker
	expectations *expectations
	queue        *worker.Queue
}

// New builds the controller and registers its handlers on the shared
// informers (which the caller's factory runs).
func New(cfg Config) (*Controller, error) {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{
		client:       cfg.Client,
		pods:         cfg.Pods.Lister(),
		rsLister:     cfg.ReplicaSets.Lister(),
		synced:       []cache.InformerSynced{cfg.Pods.Informer().HasSynced, cfg.ReplicaSets.Informer().HasSynced},
		recorder:     cfg.Recorder,
		clock:        clk,
		expectations: newExpectations(clk),
		queue:        worker.NewQueue("replicaset", clk),
	}
	if _, err := cfg.ReplicaSets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.queue.Enqueue,
		UpdateFunc: func(_, cur any) { c.queue.Enqueue(cur) },
		DeleteFunc: c.deleteReplicaSet,
	}); err != nil {
		return nil, fmt.Errorf("replicaset controller: %w", err)
	}
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, fmt.Errorf("replicaset controller: %w", err)
	}
	return c, nil
}

// Run waits for the informers' sync and runs n workers until ctx ends.
func (c *Controller) Run(ctx context.Context, n int) {
	c.queue.RunSynced(ctx, c.synced, n, c.sync)
}

func (c *Controller) deleteReplicaSet(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.expectations.forget(key)
	}
	c.queue.Enqueue(obj)
}

// addPod counts a creation for the pod's controller, or wakes every
// ReplicaSet that may adopt an orphan.
func (c *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if rs := c.resolve(pod.Namespace, ref); rs != nil {
			key := rsKey(rs)
			c.expectations.creationObserved(key)
			c.queue.Add(key)
		}
		return
	}
	c.enqueueSelecting(pod)
}

// updatePod is upstream's updatePod: a deletionTimestamp counts as the
// deletion; controller or label changes wake old and new owners.
func (c *Controller) updatePod(oldObj, curObj any) {
	old, cur := oldObj.(*corev1.Pod), curObj.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	labelsChanged := !labels.Equals(old.Labels, cur.Labels)
	if cur.DeletionTimestamp != nil {
		c.deletePod(cur)
		if labelsChanged {
			c.deletePod(old)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := (curRef == nil) != (oldRef == nil) || (curRef != nil && curRef.UID != oldRef.UID)
	if refChanged && oldRef != nil {
		if rs := c.resolve(old.Namespace, oldRef); rs != nil {
			c.queue.Add(rsKey(rs))
		}
	}
	if curRef != nil {
		rs := c.resolve(cur.Namespace, curRef)
		if rs == nil {
			return
		}
		c.queue.Add(rsKey(rs))
		// Upstream: recheck availability once minReadySeconds have passed.
		if !IsReady(old) && IsReady(cur) && rs.Spec.MinReadySeconds > 0 {
			c.queue.AddAfter(rsKey(rs), secondsPlusOne(rs.Spec.MinReadySeconds))
		}
		return
	}
	if labelsChanged || refChanged {
		c.enqueueSelecting(cur)
	}
}

// deletePod marks the pod's deletion as seen by its controller.
func (c *Controller) deletePod(obj any) {
	pod, ok := worker.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return
	}
	rs := c.resolve(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key := rsKey(rs)
	c.expectations.deletionObserved(key, pod.Namespace+"/"+pod.Name)
	c.queue.Add(key)
}

// resolve returns the cached ReplicaSet ref names, nil if it is not one
// or has another UID.
func (c *Controller) resolve(ns string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	return controllerref.Resolve(ref, controllerKind, c.rsLister.ReplicaSets(ns).Get)
}

// enqueueSelecting queues every ReplicaSet whose selector matches pod.
func (c *Controller) enqueueSelecting(pod *corev1.Pod) {
	for _, rs := range c.selecting(pod) {
		c.queue.Add(rsKey(rs))
	}
}

// selecting returns the ReplicaSets of pod's namespace selecting it.
func (c *Controller) selecting(pod *corev1.Pod) []*appsv1.ReplicaSet {
	all, err := c.rsLister.ReplicaSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return controllerref.Selecting(all, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector },
		labels.Set(pod.Labels))
}

func rsKey(rs *appsv1.ReplicaSet) string { return rs.Namespace + "/" + rs.Name }
