package pod

import (
	"context"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"
)

// fakePods is the pods' Stores for EvictionREST: one namespace, a
// resourceVersion bumped on each update.
type fakePods struct {
	pods    map[string]*corev1.Pod
	deleted map[string]*metav1.DeleteOptions
	rv      int
}

func (f *fakePods) New() runtime.Object { return &corev1.Pod{} }
func (f *fakePods) Destroy()            {}

func (f *fakePods) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	p, ok := f.pods[name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return p.DeepCopy(), nil
}

func (f *fakePods) Update(ctx context.Context, name string, info rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	_ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	old, err := f.Get(ctx, name, nil)
	if err != nil {
		return nil, false, err
	}
	obj, err := info.UpdatedObject(ctx, old)
	if err != nil {
		return nil, false, err
	}
	p := obj.(*corev1.Pod)
	f.rv++
	p.ResourceVersion = strconv.Itoa(f.rv)
	f.pods[name] = p
	return p, false, nil
}

func (f *fakePods) Delete(_ context.Context, name string, _ rest.ValidateObjectFunc, o *metav1.DeleteOptions) (runtime.Object, bool, error) {
	p, ok := f.pods[name]
	if !ok {
		return nil, false, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	if o.Preconditions != nil && o.Preconditions.ResourceVersion != nil && *o.Preconditions.ResourceVersion != p.ResourceVersion {
		return nil, false, apierrors.NewConflict(corev1.Resource("pods"), name, nil)
	}
	f.deleted[name] = o
	return p, true, nil
}

// fakeBudgets is Budgets on a slice.
type fakeBudgets struct {
	pdbs    []policyv1.PodDisruptionBudget
	updates int
}

func (f *fakeBudgets) List(context.Context, string) ([]policyv1.PodDisruptionBudget, error) {
	var out []policyv1.PodDisruptionBudget
	for _, p := range f.pdbs {
		out = append(out, *p.DeepCopy())
	}
	return out, nil
}

func (f *fakeBudgets) Get(_ context.Context, _, name string) (*policyv1.PodDisruptionBudget, error) {
	for _, p := range f.pdbs {
		if p.Name == name {
			return p.DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(policyv1.Resource("poddisruptionbudgets"), name)
}

func (f *fakeBudgets) UpdateStatus(_ context.Context, pdb *policyv1.PodDisruptionBudget) error {
	for i := range f.pdbs {
		if f.pdbs[i].Name == pdb.Name {
			f.pdbs[i] = *pdb.DeepCopy()
			f.updates++
		}
	}
	return nil
}

func evictionPod(phase corev1.PodPhase, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "default", Labels: map[string]string{"app": "db"}, ResourceVersion: "1"},
		Status:     corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

// budget is a PodDisruptionBudget of app=db, generation 1, observed as
// observed, with allowed disruptions and healthy/desired pods.
func budget(name string, observed int64, allowed, healthy, desired int32) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(desired)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: observed, DisruptionsAllowed: allowed,
			CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: healthy},
	}
}

func TestEvictionCreate(t *testing.T) {
	running := func() *corev1.Pod { return evictionPod(corev1.PodRunning, true) }
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		pdbs     []policyv1.PodDisruptionBudget
		dryRun   bool
		wantErr  string // in the error; "" none
		want429  bool
		deleted  bool
		wantRV   bool // the delete was conditional on the pod's resourceVersion
		budgeted bool // the budget's status was written
	}{
		{name: "no budget", pod: running(), deleted: true},
		{name: "a disruption allowed", pod: running(), pdbs: []policyv1.PodDisruptionBudget{budget("db", 1, 1, 2, 1)}, deleted: true, budgeted: true},
		{name: "none allowed", pod: running(), pdbs: []policyv1.PodDisruptionBudget{budget("db", 1, 0, 1, 1)}, want429: true,
			wantErr: "The disruption budget db needs 1 healthy pods and has 1 currently"},
		{name: "budget not observed yet", pod: running(), pdbs: []policyv1.PodDisruptionBudget{budget("db", 0, 1, 2, 1)}, want429: true,
			wantErr: "The disruption budget db is still being processed by the server."},
		{name: "pending pod", pod: evictionPod(corev1.PodPending, false), pdbs: []policyv1.PodDisruptionBudget{budget("db", 1, 0, 1, 1)},
			deleted: true, wantRV: true},
		{name: "succeeded pod", pod: evictionPod(corev1.PodSucceeded, false), pdbs: []policyv1.PodDisruptionBudget{budget("db", 1, 0, 1, 1)},
			deleted: true},
		{name: "unready pod, budget met", pod: evictionPod(corev1.PodRunning, false),
			pdbs: []policyv1.PodDisruptionBudget{budget("db", 1, 0, 2, 2)}, deleted: true, wantRV: true},
		{name: "unready pod, budget not met", pod: evictionPod(corev1.PodRunning, false),
			pdbs: []policyv1.PodDisruptionBudget{budget("db", 1, 0, 1, 2)}, want429: true},
		{name: "two budgets", pod: running(), pdbs: []policyv1.PodDisruptionBudget{budget("a", 1, 1, 2, 1), budget("b", 1, 1, 2, 1)}},
		{name: "dry run", pod: running(), pdbs: []policyv1.PodDisruptionBudget{budget("db", 1, 1, 2, 1)}, dryRun: true, deleted: true},
	} {
		pods := &fakePods{pods: map[string]*corev1.Pod{"db-0": tc.pod}, deleted: map[string]*metav1.DeleteOptions{}, rv: 1}
		budgets := &fakeBudgets{pdbs: tc.pdbs}
		r := &EvictionREST{Pods: pods, Delete: pods, Budgets: budgets}
		opts := &metav1.CreateOptions{}
		if tc.dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		out, err := r.Create(context.Background(), "db-0", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "db-0"}}, nil, opts)
		switch {
		case tc.want429 && !apierrors.IsTooManyRequests(err):
			t.Errorf("%s: err %v, want 429", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(errorText(err), tc.wantErr)):
			t.Errorf("%s: err %v, want %q", tc.name, errorText(err), tc.wantErr)
		case !tc.want429 && tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		}
		if s, ok := out.(*metav1.Status); tc.name == "two budgets" && (!ok || s.Code != 500 || !strings.Contains(s.Message, "more than one PodDisruptionBudget")) {
			t.Errorf("%s: %+v, want upstream's 500", tc.name, out)
		}
		del, deleted := pods.deleted["db-0"]
		if deleted != tc.deleted {
			t.Errorf("%s: deleted %v, want %v", tc.name, deleted, tc.deleted)
			continue
		}
		if deleted {
			hasRV := del.Preconditions != nil && del.Preconditions.ResourceVersion != nil
			if hasRV != tc.wantRV || hasRV && *del.Preconditions.ResourceVersion != pods.pods["db-0"].ResourceVersion {
				t.Errorf("%s: delete preconditions %+v, want a resourceVersion: %v", tc.name, del.Preconditions, tc.wantRV)
			}
			if got := condition(pods.pods["db-0"], corev1.DisruptionTarget); tc.dryRun != (got == nil) || got != nil && got.Reason != "EvictionByEvictionAPI" {
				t.Errorf("%s: DisruptionTarget %+v (dry run %v)", tc.name, got, tc.dryRun)
			}
		}
		if tc.budgeted != (budgets.updates == 1) {
			t.Errorf("%s: %d budget status writes", tc.name, budgets.updates)
		}
		if tc.budgeted {
			s := budgets.pdbs[0].Status
			if _, ok := s.DisruptedPods["db-0"]; s.DisruptionsAllowed != 0 || !ok {
				t.Errorf("%s: budget status %+v, want no disruption left and db-0 disrupted", tc.name, s)
			}
		}
	}
}

// TestEvictionRefusesBadRequests: a name that is not the URL's, and the
// delete option eviction may not take.
func TestEvictionRefusesBadRequests(t *testing.T) {
	r := &EvictionREST{}
	if _, err := r.Create(context.Background(), "a", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, nil, &metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("name mismatch: %v", err)
	}
	e := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		DeleteOptions: &metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)}}
	if _, err := r.Create(context.Background(), "a", e, nil, &metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("ignoreStoreReadErrorWithClusterBreakingPotential: %v", err)
	}
	e = &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a"}, DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}
	if _, err := r.Create(context.Background(), "a", e, nil, &metav1.CreateOptions{DryRun: []string{"x"}}); err == nil ||
		!strings.Contains(err.Error(), "Non-matching dry-run options") {
		t.Errorf("dry-run mismatch: %v", err)
	}
}

func condition(pod *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == typ {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// errorText is err's message with its status causes.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Details != nil {
		for _, c := range s.Status().Details.Causes {
			text += "; " + c.Message
		}
	}
	return text
}
