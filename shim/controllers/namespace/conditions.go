package namespace

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// The conditions, reasons and messages below are upstream's
// (pkg/controller/namespace/deletion/status_condition_utils.go), so that
// `kubectl describe namespace` reads the same.
var (
	conditionTypes = []corev1.NamespaceConditionType{
		corev1.NamespaceDeletionDiscoveryFailure,
		corev1.NamespaceDeletionGVParsingFailure,
		corev1.NamespaceDeletionContentFailure,
		corev1.NamespaceContentRemaining,
		corev1.NamespaceFinalizersRemaining,
	}
	okReasons = map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "ResourcesDiscovered",
		corev1.NamespaceDeletionGVParsingFailure: "ParsedGroupVersions",
		corev1.NamespaceDeletionContentFailure:   "ContentDeleted",
		corev1.NamespaceContentRemaining:         "ContentRemoved",
		corev1.NamespaceFinalizersRemaining:      "ContentHasNoFinalizers",
	}
	okMessages = map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceContentRemaining:         "All content successfully removed",
		corev1.NamespaceFinalizersRemaining:      "All content-preserving finalizers finished",
	}
)

// contentTotals counts what remains of a namespace's content.
type contentTotals struct {
	byResource  map[schema.GroupVersionResource]int
	byFinalizer map[string]int
}

// add counts what remains of one resource.
func (t contentTotals) add(gvr schema.GroupVersionResource, left remaining) {
	if left.count == 0 {
		return
	}
	t.byResource[gvr] += left.count
	for f, n := range left.finalizers {
		t.byFinalizer[f] += n
	}
}

// conditionUpdater collects the failing conditions of one deletion pass;
// update then writes them, and the "ok" variant of the others.
type conditionUpdater struct {
	failing       []corev1.NamespaceCondition
	contentErrors []error
}

func (u *conditionUpdater) fail(t corev1.NamespaceConditionType, reason, message string) {
	u.failing = append(u.failing, corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message})
}

// discoveryErr records NamespaceDeletionDiscoveryFailure.
func (u *conditionUpdater) discoveryErr(err error) {
	msg := err.Error()
	if derr, ok := errors.AsType[*discovery.ErrGroupDiscoveryFailed](err); ok {
		msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(derr.Groups), err)
	}
	u.fail(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
}

// groupVersionErr records NamespaceDeletionGroupVersionParsingFailure.
func (u *conditionUpdater) groupVersionErr(err error) {
	u.fail(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", err.Error())
}

// deleteContentErr collects one resource's deletion failure.
func (u *conditionUpdater) deleteContentErr(err error) {
	u.contentErrors = append(u.contentErrors, err)
}

// contentTotals records NamespaceContentRemaining and
// NamespaceFinalizersRemaining.
func (u *conditionUpdater) contentTotals(t contentTotals) {
	if len(t.byResource) > 0 {
		var parts []string
		for gvr, n := range t.byResource {
			parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
		sort.Strings(parts)
		u.fail(corev1.NamespaceContentRemaining, "SomeResourcesRemain",
			"Some resources are remaining: "+strings.Join(parts, ", "))
	}
	if len(t.byFinalizer) > 0 {
		var parts []string
		for f, n := range t.byFinalizer {
			parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
		}
		sort.Strings(parts)
		u.fail(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: "+strings.Join(parts, ", "))
	}
}

// update sets every condition type on status (failing, else ok) and
// reports whether anything changed. now is the transition time of new and
// flipped conditions.
func (u *conditionUpdater) update(status *corev1.NamespaceStatus, now time.Time) bool {
	if len(u.contentErrors) > 0 {
		msgs := make([]string, 0, len(u.contentErrors))
		for _, e := range u.contentErrors {
			msgs = append(msgs, e.Error())
		}
		sort.Strings(msgs)
		u.fail(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", ")))
	}
	changed := false
	for _, t := range conditionTypes {
		want := corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: okReasons[t], Message: okMessages[t]}
		if c := findCondition(u.failing, t); c != nil {
			want = *c
		}
		want.LastTransitionTime = metav1.NewTime(now)
		old := findCondition(status.Conditions, t)
		switch {
		case old == nil:
			status.Conditions = append(status.Conditions, want)
		case old.Status != want.Status || old.Reason != want.Reason || old.Message != want.Message:
			if old.Status == want.Status {
				want.LastTransitionTime = old.LastTransitionTime
			}
			*old = want
		default:
			continue
		}
		changed = true
	}
	return changed
}

func findCondition(conds []corev1.NamespaceCondition, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
