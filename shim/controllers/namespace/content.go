package namespace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// finalizerEstimateSeconds is upstream's guess of how long objects with
// finalizers take to go away.
const finalizerEstimateSeconds = 15

// resource is a deletable namespaced resource and the verbs it serves.
type resource struct {
	gvr   schema.GroupVersionResource
	verbs []string
}

// remaining is what is left of one resource after a deletion pass.
type remaining struct {
	estimate   int64          // seconds to wait before looking again; 0: none
	count      int            // objects left
	finalizers map[string]int // objects left per finalizer
}

// podsGVR is deleted first (upstream's OrderedNamespaceDeletion).
var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// deleteAllContent is upstream's deleteAllContent: it deletes every
// object of every deletable namespaced resource in ns, pods first (the
// rest waits until no pod is left, so that a pod never outlives the
// Secrets, ConfigMaps or claims it uses), sets the deletion conditions
// on ns, and returns an estimate in seconds of how long what remains
// takes to go away. Errors of one resource do not stop the others.
func (c *Controller) deleteAllContent(ctx context.Context, ns *corev1.Namespace) (int64, error) {
	var errs []error
	conds := conditionUpdater{}
	resources, err := c.discover(&conds)
	if err != nil {
		errs = append(errs, err)
	}
	var estimate int64
	totals := contentTotals{byResource: map[schema.GroupVersionResource]int{}, byFinalizer: map[string]int{}}
	// Pods sort first; once they are done, the rest follows.
	slices.SortStableFunc(resources, func(a, b resource) int { return boolRank(b.gvr == podsGVR) - boolRank(a.gvr == podsGVR) })
	for _, r := range resources {
		left, err := c.deleteResource(ctx, r, ns)
		if err != nil {
			errs = append(errs, err)
			conds.deleteContentErr(err)
		}
		estimate = max(estimate, left.estimate)
		totals.add(r.gvr, left)
		if r.gvr == podsGVR && left.count > 0 {
			klog.FromContext(ctx).V(5).Info("Pods still remain, delaying the deletion of other resources", "namespace", ns.Name)
			break
		}
	}
	conds.contentTotals(totals)
	// Always written when changed: a failure that cleared must show too.
	if conds.update(&ns.Status, c.cfg.Clock.Now()) {
		if _, err := c.cfg.Client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Could not update namespace conditions", "namespace", ns.Name)
		}
	}
	return estimate, utilerrors.NewAggregate(errs)
}

// boolRank is 1 for true, 0 for false.
func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// discover returns the deletable namespaced resources (with verb delete,
// subresources left out); failures go to conds, and what was found is
// still returned.
func (c *Controller) discover(conds *conditionUpdater) ([]resource, error) {
	lists, err := c.cfg.Discover()
	if err != nil {
		conds.discoveryErr(err)
	}
	var out []resource
	var gvErrs []error
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			gvErrs = append(gvErrs, perr)
			continue
		}
		for _, r := range l.APIResources {
			if r.Namespaced && !strings.Contains(r.Name, "/") && slices.Contains(r.Verbs, "delete") {
				out = append(out, resource{gvr: gv.WithResource(r.Name), verbs: r.Verbs})
			}
		}
	}
	if gvErr := utilerrors.NewAggregate(gvErrs); gvErr != nil {
		conds.groupVersionErr(gvErr)
		err = utilerrors.NewAggregate([]error{err, gvErr})
	}
	return out, err
}

// deleteResource is upstream's deleteAllContentForGroupVersionResource:
// delete all objects of r in ns (deletecollection, else one by one, with
// background propagation so that no orphan finalizer is added), then list
// what remains. Objects that remain without an estimate (grace period) or
// a finalizer to explain them are an error.
func (c *Controller) deleteResource(ctx context.Context, r resource, ns *corev1.Namespace) (remaining, error) {
	estimate, err := c.estimate(ctx, r.gvr, ns)
	if err != nil {
		return remaining{}, fmt.Errorf("estimate %s: %w", r.gvr, err)
	}
	if err := c.deleteObjects(ctx, r, ns.Name); err != nil {
		return remaining{estimate: estimate}, err
	}
	if !slices.Contains(r.verbs, "list") {
		return remaining{estimate: estimate}, nil
	}
	list, err := c.cfg.Metadata.Resource(r.gvr).Namespace(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return remaining{estimate: estimate}, fmt.Errorf("list %s: %w", r.gvr, err)
	}
	if len(list.Items) == 0 {
		return remaining{}, nil
	}
	left := remaining{estimate: estimate, count: len(list.Items), finalizers: map[string]int{}}
	for _, item := range list.Items {
		for _, f := range item.Finalizers {
			left.finalizers[f]++
		}
	}
	switch {
	case estimate != 0:
		return left, nil
	case len(left.finalizers) > 0:
		left.estimate = finalizerEstimateSeconds
		return left, nil
	}
	return left, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", ns.Name, r.gvr)
}

// deleteObjects deletes all objects of r in ns, with deletecollection
// where served.
func (c *Controller) deleteObjects(ctx context.Context, r resource, ns string) error {
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	client := c.cfg.Metadata.Resource(r.gvr).Namespace(ns)
	klog.FromContext(ctx).V(5).Info("Deleting namespace content", "namespace", ns, "resource", r.gvr)
	if slices.Contains(r.verbs, "deletecollection") {
		err := client.DeleteCollection(ctx, opts, metav1.ListOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsMethodNotSupported(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deletecollection %s: %w", r.gvr, err)
		}
	}
	if !slices.Contains(r.verbs, "list") {
		return nil
	}
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list %s: %w", r.gvr, err)
	}
	for _, item := range list.Items {
		err := client.Delete(ctx, item.Name, opts)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			return fmt.Errorf("delete %s %s: %w", r.gvr, item.Name, err)
		}
	}
	return nil
}

// estimate is upstream's estimateGracefulTermination: for pods, the
// longest grace period of the pods not yet terminal, less the time since
// the namespace's deletion; 0 for other resources.
func (c *Controller) estimate(ctx context.Context, gvr schema.GroupVersionResource, ns *corev1.Namespace) (int64, error) {
	if gvr.GroupResource() != (schema.GroupResource{Resource: "pods"}) {
		return 0, nil
	}
	pods, err := c.cfg.Client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var estimate int64
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g > estimate {
			estimate = *g
		}
	}
	if c.cfg.Clock.Since(ns.DeletionTimestamp.Time) >= time.Duration(estimate)*time.Second {
		return 0, nil
	}
	return estimate, nil
}
