package pod

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/util/dryrun"
	"k8s.io/client-go/util/retry"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	"k8s.io/utils/ptr"
)

// EvictionREST is pods/eviction, kube-apiserver's eviction subresource
// (pkg/registry/core/pod/storage/eviction.go, v1.37), ported to the
// shim's external types: a pod whose PodDisruptionBudget allows a
// disruption (or that none guards, or that is not running) gets the
// DisruptionTarget condition and is deleted; otherwise 429 with upstream's
// causes. Upstream's cannot be built outside its own pod storage.
type EvictionREST struct {
	// Pods is the pods' status Store (get, and update of the condition);
	// Delete deletes through the main one.
	Pods   rest.Patcher
	Delete rest.GracefulDeleter
	// Budgets reads and writes the PodDisruptionBudgets.
	Budgets Budgets
}

// Budgets is what eviction reads and writes of the PodDisruptionBudgets.
type Budgets interface {
	List(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error)
	Get(ctx context.Context, namespace, name string) (*policyv1.PodDisruptionBudget, error)
	UpdateStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error
}

// evictionsRetry is upstream's EvictionsRetry; maxDisruptedPods its
// MaxDisruptedPodSize.
var evictionsRetry = wait.Backoff{Steps: 20, Duration: 500 * time.Millisecond, Factor: 1.0, Jitter: 0.1}

const maxDisruptedPods = 2000

var v1Eviction = policyv1.SchemeGroupVersion.WithKind("Eviction")

var (
	_ rest.NamedCreater             = &EvictionREST{}
	_ rest.GroupVersionKindProvider = &EvictionREST{}
)

// New implements rest.Storage.
func (r *EvictionREST) New() runtime.Object { return &policyv1.Eviction{} }

// Destroy implements rest.Storage; the pods' Store owns the storage.
func (r *EvictionREST) Destroy() {}

// GroupVersionKind implements rest.GroupVersionKindProvider: discovery
// says policy/v1 Eviction, which kubectl drain looks for.
func (r *EvictionREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return v1Eviction
}

// Create evicts the pod name, as upstream's EvictionREST.Create.
func (r *EvictionREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	eviction, ok := obj.(*policyv1.Eviction)
	switch {
	case !ok:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Eviction object: %T", obj))
	case name != eviction.Name:
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	case eviction.DeleteOptions != nil && ptr.Deref(eviction.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential, false):
		return nil, apierrors.NewInvalid(v1Eviction.GroupKind(), name, field.ErrorList{field.Invalid(
			field.NewPath("deleteOptions").Child("ignoreStoreReadErrorWithClusterBreakingPotential"), true,
			"can not be set for pod eviction, try after removing the option")})
	}
	opts, err := propagateDryRun(eviction, options)
	if err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, eviction.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	pod, deleted, err := r.deleteIfUnguarded(ctx, name, opts)
	if err != nil || deleted {
		return successOr(err)
	}
	pdbName, status, forceRV, err := r.decrementBudget(ctx, pod, dryrun.IsDryRun(opts.DryRun))
	if err != nil || status != nil {
		return status, err
	}
	del := opts
	if forceRV {
		del = opts.DeepCopy()
		setPreconditionsResourceVersion(del, &pod.ResourceVersion)
	}
	err = r.addConditionAndDelete(ctx, name, del)
	if err != nil && apierrors.IsConflict(err) && forceRV && resourceVersionIsUnset(opts) {
		return nil, tooManyRequests(pdbName)
	}
	return successOr(err)
}

func successOr(err error) (runtime.Object, error) {
	if err != nil {
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess}, nil
}

// deleteIfUnguarded reads the pod (retrying conflicts unless the caller
// gave a resourceVersion) and deletes it at once when no budget applies
// to it: terminal, pending or already terminating.
func (r *EvictionREST) deleteIfUnguarded(ctx context.Context, name string, opts *metav1.DeleteOptions) (*corev1.Pod, bool, error) {
	shouldRetry := apierrors.IsConflict
	if !resourceVersionIsUnset(opts) {
		shouldRetry = func(error) bool { return false }
	}
	var pod *corev1.Pod
	deleted := false
	err := retry.OnError(evictionsRetry, shouldRetry, func() error {
		obj, err := r.Pods.Get(ctx, name, &metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod = obj.(*corev1.Pod)
		if !canIgnorePDB(pod) {
			return nil
		}
		del := opts
		if shouldEnforceResourceVersion(pod) && resourceVersionIsUnset(opts) {
			del = opts.DeepCopy()
			setPreconditionsResourceVersion(del, &pod.ResourceVersion)
		}
		if err := r.addConditionAndDelete(ctx, name, del); err != nil {
			return err
		}
		deleted = true
		return nil
	})
	return pod, deleted, err
}

// decrementBudget applies pod's budget: status is the answer when the
// pod has more than one; forceRV says the delete must be conditional on
// the pod's resourceVersion (an unready pod deleted without using a
// disruption).
func (r *EvictionREST) decrementBudget(ctx context.Context, pod *corev1.Pod, dryRun bool) (pdbName string, status *metav1.Status, forceRV bool, err error) {
	pdbs, err := r.budgetsOf(ctx, pod)
	switch {
	case err != nil:
		return "", nil, false, err
	case len(pdbs) > 1:
		return "", &metav1.Status{Status: metav1.StatusFailure, Code: 500,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}, false, nil
	case len(pdbs) == 0:
		return "", nil, false, nil
	}
	pdb := &pdbs[0]
	if !podReady(pod) {
		if ptr.Deref(pdb.Spec.UnhealthyPodEvictionPolicy, "") == policyv1.AlwaysAllow ||
			pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
			return pdb.Name, nil, true, nil
		}
	}
	refresh := false
	err = retry.RetryOnConflict(evictionsRetry, func() error {
		if refresh {
			if pdb, err = r.Budgets.Get(ctx, pod.Namespace, pdb.Name); err != nil {
				return err
			}
		}
		if err := r.checkAndDecrement(ctx, pod.Name, *pdb, dryRun); err != nil {
			refresh = true
			return err
		}
		return nil
	})
	if wait.Interrupted(err) {
		err = apierrors.NewTimeoutError(fmt.Sprintf("couldn't update PodDisruptionBudget %q due to conflicts", pdb.Name), 10)
	}
	return pdb.Name, nil, false, err
}

// budgetsOf are the PodDisruptionBudgets of pod's namespace whose selector
// matches it.
func (r *EvictionREST) budgetsOf(ctx context.Context, pod *corev1.Pod) ([]policyv1.PodDisruptionBudget, error) {
	all, err := r.Budgets.List(ctx, pod.Namespace)
	if err != nil {
		return nil, err
	}
	var out []policyv1.PodDisruptionBudget
	for _, pdb := range all {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && pdb.Namespace == pod.Namespace && sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, pdb)
		}
	}
	return out, nil
}

// checkAndDecrement takes one disruption of pdb for podName, or says why
// not with upstream's errors and causes.
func (r *EvictionREST) checkAndDecrement(ctx context.Context, podName string, pdb policyv1.PodDisruptionBudget, dryRun bool) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return tooManyRequests(pdb.Name)
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return forbidden(pdb.Name, "pdb disruptions allowed is negative", "pdb disruptions allowed is negative")
	}
	if len(pdb.Status.DisruptedPods) > maxDisruptedPods {
		return forbidden(pdb.Name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
			"too many pending evictions not confirmed by PDB controller")
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes,
			metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: noDisruptionMessage(&pdb)})
		return err
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		pdbhelper.UpdateDisruptionAllowedCondition(&pdb)
	}
	if dryRun {
		return nil
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	// The disruption controller must not count the pod as available while
	// it is being deleted.
	pdb.Status.DisruptedPods[podName] = metav1.Now()
	return r.Budgets.UpdateStatus(ctx, &pdb)
}

// noDisruptionMessage is upstream's cause for a budget that allows none.
func noDisruptionMessage(pdb *policyv1.PodDisruptionBudget) string {
	c := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	failed := c != nil && c.Status == metav1.ConditionFalse && c.Message != ""
	switch {
	case failed && c.Reason == policyv1.SyncFailedReason:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, c.Message)
	case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
		return fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	case failed:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, c.Reason, c.Message)
	}
	return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
}

// addConditionAndDelete sets the DisruptionTarget condition on the latest
// pod (unless dry run), then deletes it with opts.
func (r *EvictionREST) addConditionAndDelete(ctx context.Context, name string, opts *metav1.DeleteOptions) error {
	if !dryrun.IsDryRun(opts.DryRun) {
		latest := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
			pod := old.(*corev1.Pod).DeepCopy()
			if err := checkPreconditions(pod, opts.Preconditions); err != nil {
				return nil, err
			}
			setDisruptionTarget(pod)
			return pod, nil
		}
		updated, _, err := r.Pods.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, latest), rest.ValidateAllObjectFunc,
			rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		if !resourceVersionIsUnset(opts) {
			// Our own update moved the resourceVersion on.
			rv := updated.(*corev1.Pod).ResourceVersion
			opts = opts.DeepCopy()
			opts.Preconditions.ResourceVersion = &rv
		}
	}
	_, _, err := r.Delete.Delete(ctx, name, rest.ValidateAllObjectFunc, opts)
	return err
}

// checkPreconditions is upstream's conflict on a UID or resourceVersion
// precondition that pod no longer meets.
func checkPreconditions(pod *corev1.Pod, p *metav1.Preconditions) error {
	gr := schema.GroupResource{Resource: "Pod"}
	switch {
	case p == nil:
	case p.UID != nil && *p.UID != "" && *p.UID != pod.UID:
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, pod.UID))
	case p.ResourceVersion != nil && *p.ResourceVersion != "" && *p.ResourceVersion != pod.ResourceVersion:
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, pod.ResourceVersion))
	}
	return nil
}

// setDisruptionTarget sets the condition DisruptionTarget=True, reason
// EvictionByEvictionAPI, with a new transition time if it changed.
func setDisruptionTarget(pod *corev1.Pod) {
	c := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.Now()}
	for i, old := range pod.Status.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// propagateDryRun is upstream's: the request's dry run goes into the
// eviction's delete options; the two must not disagree.
func propagateDryRun(eviction *policyv1.Eviction, options *metav1.CreateOptions) (*metav1.DeleteOptions, error) {
	switch {
	case eviction.DeleteOptions == nil:
		return &metav1.DeleteOptions{DryRun: options.DryRun}, nil
	case len(eviction.DeleteOptions.DryRun) == 0:
		eviction.DeleteOptions.DryRun = options.DryRun
	case len(options.DryRun) != 0 && !reflect.DeepEqual(options.DryRun, eviction.DeleteOptions.DryRun):
		return nil, fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", options.DryRun, eviction.DeleteOptions.DryRun) //nolint:staticcheck // upstream's message
	}
	return eviction.DeleteOptions, nil
}

// canIgnorePDB: a terminal, pending or terminating pod is deleted without
// looking at budgets.
func canIgnorePDB(pod *corev1.Pod) bool {
	p := pod.Status.Phase
	return p == corev1.PodSucceeded || p == corev1.PodFailed || p == corev1.PodPending || pod.DeletionTimestamp != nil
}

// shouldEnforceResourceVersion: not for terminal or terminating pods.
func shouldEnforceResourceVersion(pod *corev1.Pod) bool {
	p := pod.Status.Phase
	return p != corev1.PodSucceeded && p != corev1.PodFailed && pod.DeletionTimestamp == nil
}

func resourceVersionIsUnset(o *metav1.DeleteOptions) bool {
	return o.Preconditions == nil || o.Preconditions.ResourceVersion == nil
}

func setPreconditionsResourceVersion(o *metav1.DeleteOptions, rv *string) {
	if o.Preconditions == nil {
		o.Preconditions = &metav1.Preconditions{}
	}
	o.Preconditions.ResourceVersion = rv
}

// podReady is the pod's Ready condition (upstream's IsPodReady).
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// tooManyRequests is upstream's 429 for a budget still being processed.
func tooManyRequests(name string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name)})
	return err
}

// forbidden is upstream's 403 for a budget that cannot be used.
func forbidden(name, reason, detail string) error {
	err := apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), name, errors.New(reason))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: %s", name, detail)})
	return err
}
