// Package deployment is the Deployment controller (upstream's
// pkg/controller/deployment, v1.34, re-implemented compactly): it owns
// ReplicaSets named <deployment>-<pod-template-hash>, one per template,
// and moves replicas from the old ones to the new one by the strategy
// (RollingUpdate with maxSurge/maxUnavailable, or Recreate), scales them
// proportionally, keeps revisionHistoryLimit old ones, and reports status
// with the Available and Progressing conditions kubectl rollout reads.
package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// controllerKind is what the ReplicaSets' controller references name.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Config are the controller's dependencies.
type Config struct {
	Client      kubernetes.Interface
	Deployments appsinformers.DeploymentInformer
	ReplicaSets appsinformers.ReplicaSetInformer
	// Pods tell Recreate when the old pods are gone.
	Pods coreinformers.PodInformer
	// Recorder gets ScalingReplicaSet events; nil: none.
	Recorder record.EventRecorder
	// Clock drives the queue and the conditions' times; nil: real.
	Clock clock.WithTicker
}

// Controller is the Deployment controller.
type Controller struct {
	client   kubernetes.Interface
	dLister  appslisters.DeploymentLister
	rsLister appslisters.ReplicaSetLister
	pods     corelisters.PodLister
	synced   []cache.InformerSynced
	recorder record.EventRecorder
	clock    clock.WithTicker
	queue    *worker.Queue
}

// New builds the controller and registers its handlers on the shared
// informers (which the caller's factory runs).
func New(cfg Config) (*Controller, error) {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{
		client:   cfg.Client,
		dLister:  cfg.Deployments.Lister(),
		rsLister: cfg.ReplicaSets.Lister(),
		pods:     cfg.Pods.Lister(),
		synced: []cache.InformerSynced{cfg.Deployments.Informer().HasSynced,
			cfg.ReplicaSets.Informer().HasSynced, cfg.Pods.Informer().HasSynced},
		recorder: cfg.Recorder,
		clock:    clk,
		queue:    worker.NewQueue("deployment", clk),
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{cfg.Deployments.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: c.queue.Enqueue,
			UpdateFunc: func(_, cur any) { c.queue.Enqueue(cur) }, DeleteFunc: c.queue.Enqueue}},
		{cfg.ReplicaSets.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: c.replicaSetChanged,
			UpdateFunc: c.updateReplicaSet, DeleteFunc: c.replicaSetChanged}},
		{cfg.Pods.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.deletePod}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("deployment controller: %w", err)
		}
	}
	return c, nil
}

// Run waits for the informers' sync and runs n workers until ctx ends.
func (c *Controller) Run(ctx context.Context, n int) {
	c.queue.RunSynced(ctx, c.synced, n, c.sync)
}

// replicaSetChanged wakes the ReplicaSet's controller, or for an orphan
// every Deployment that may adopt it (upstream's addReplicaSet and
// deleteReplicaSet).
func (c *Controller) replicaSetChanged(obj any) {
	rs, ok := worker.Object[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := c.resolve(rs.Namespace, ref); d != nil {
			c.queue.Enqueue(d)
		}
		return
	}
	for _, d := range c.selecting(rs) {
		c.queue.Enqueue(d)
	}
}

// updateReplicaSet also wakes a previous controller.
func (c *Controller) updateReplicaSet(oldObj, curObj any) {
	old, cur := oldObj.(*appsv1.ReplicaSet), curObj.(*appsv1.ReplicaSet)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(old); ref != nil {
		if curRef := metav1.GetControllerOfNoCopy(cur); curRef == nil || curRef.UID != ref.UID {
			if d := c.resolve(old.Namespace, ref); d != nil {
				c.queue.Enqueue(d)
			}
		}
	}
	c.replicaSetChanged(cur)
}

// deletePod wakes a Recreate Deployment waiting for its old pods to go.
func (c *Controller) deletePod(obj any) {
	pod, ok := worker.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	if dref := metav1.GetControllerOfNoCopy(rs); dref != nil {
		if d := c.resolve(rs.Namespace, dref); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
			c.queue.Enqueue(d)
		}
	}
}

// resolve returns the cached Deployment ref names, nil if it is not one
// or has another UID.
func (c *Controller) resolve(ns string, ref *metav1.OwnerReference) *appsv1.Deployment {
	return controllerref.Resolve(ref, controllerKind, c.dLister.Deployments(ns).Get)
}

// selecting returns the Deployments whose selector matches rs's labels.
func (c *Controller) selecting(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	all, err := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return controllerref.Selecting(all, func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector },
		labels.Set(rs.Labels))
}

// updateStatus writes d's status (and annotations, which the status
// endpoint takes as upstream's does) and keeps d's resourceVersion
// current for a second write in the same sync.
func (c *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("update status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.ResourceVersion = updated.ResourceVersion
	return nil
}

func (c *Controller) event(d *appsv1.Deployment, typ, reason, format string, args ...any) {
	if c.recorder != nil {
		c.recorder.Eventf(d, typ, reason, format, args...)
	}
}
