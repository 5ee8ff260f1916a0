package accessreview

import (
	"context"
	"errors"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// fakeAuthorizer records the attributes it was asked about; it allows
// "get", denies "delete" with a reason, fails "escalate", and has no
// opinion otherwise.
type fakeAuthorizer struct{ asked authorizer.Attributes }

func (f *fakeAuthorizer) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(f.Authorize(ctx, a))
}

func (f *fakeAuthorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

func (f *fakeAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	f.asked = a
	switch a.GetVerb() {
	case "get":
		return authorizer.DecisionAllow, "ok", nil
	case "delete":
		return authorizer.DecisionDeny, "never", nil
	case "escalate":
		return authorizer.DecisionNoOpinion, "", errors.New("webhook down")
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func resourceSAR(verb string) *authorizationv1.SubjectAccessReview {
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", Groups: []string{"g"}, UID: "1", Extra: map[string]authorizationv1.ExtraValue{"k": {"v"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: verb, Group: "apps",
			Resource: "deployments", Subresource: "scale", Name: "web"},
	}}
}

// TestSubjectAccessReview: the spec's user and attributes reach the
// authorizer as upstream builds them; its decision, reason and error are
// the status.
func TestSubjectAccessReview(t *testing.T) {
	for _, tc := range []struct {
		verb string
		want authorizationv1.SubjectAccessReviewStatus
	}{
		{"get", authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "ok"}},
		{"delete", authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "never"}},
		{"escalate", authorizationv1.SubjectAccessReviewStatus{EvaluationError: "webhook down"}},
		{"list", authorizationv1.SubjectAccessReviewStatus{}},
	} {
		t.Run(tc.verb, func(t *testing.T) {
			az := &fakeAuthorizer{}
			out, err := NewSubjectAccessReviewREST(az).Create(context.Background(), resourceSAR(tc.verb), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := out.(*authorizationv1.SubjectAccessReview).Status; got != tc.want {
				t.Errorf("status %+v, want %+v", got, tc.want)
			}
			a := az.asked
			u := a.GetUser()
			if u.GetName() != "alice" || u.GetUID() != "1" || u.GetGroups()[0] != "g" || u.GetExtra()["k"][0] != "v" ||
				!a.IsResourceRequest() || a.GetNamespace() != "ns" || a.GetAPIGroup() != "apps" || a.GetAPIVersion() != "*" ||
				a.GetResource() != "deployments" || a.GetSubresource() != "scale" || a.GetName() != "web" {
				t.Errorf("attributes %+v", a)
			}
		})
	}
}

// TestSelectors: raw and structured selectors are parsed as upstream;
// what cannot be is left out and reported in evaluationError.
func TestSelectors(t *testing.T) {
	for _, tc := range []struct {
		name             string
		field            *authorizationv1.FieldSelectorAttributes
		label            *authorizationv1.LabelSelectorAttributes
		wantField        string
		wantLabel        string
		wantEvaluationEr string
	}{
		{name: "raw", field: &authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=a"},
			label:     &authorizationv1.LabelSelectorAttributes{RawSelector: "app in (x)"},
			wantField: "spec.nodeName=a", wantLabel: "app in (x)"},
		{name: "requirements", field: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
			{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpNotIn, Values: []string{"a"}},
			{Key: "x", Operator: metav1.FieldSelectorOpExists}}},
			label: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpExists}}},
			wantField: "spec.nodeName!=a", wantLabel: "app",
			wantEvaluationEr: "spec.resourceAttributes.fieldSelector partially ignored due to parse error"},
		{name: "unparsable", field: &authorizationv1.FieldSelectorAttributes{RawSelector: "a==b==c"},
			label: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: "Near"}}},
			wantEvaluationEr: "spec.resourceAttributes.fieldSelector ignored due to parse error; " +
				"spec.resourceAttributes.labelSelector ignored due to parse error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ResourceAttributesFrom(&user.DefaultInfo{Name: "u"}, authorizationv1.ResourceAttributes{
				Verb: "list", Resource: "pods", FieldSelector: tc.field, LabelSelector: tc.label})
			fieldReqs, _ := a.GetFieldSelector()
			labelReqs, _ := a.GetLabelSelector()
			if got := fieldString(fieldReqs); got != tc.wantField {
				t.Errorf("field selector %q, want %q", got, tc.wantField)
			}
			if got := labelString(labelReqs); got != tc.wantLabel {
				t.Errorf("label selector %q, want %q", got, tc.wantLabel)
			}
			if got := BuildEvaluationError(nil, a); got != tc.wantEvaluationEr {
				t.Errorf("evaluation error %q, want %q", got, tc.wantEvaluationEr)
			}
		})
	}
}

func fieldString(reqs fields.Requirements) string {
	s := make([]string, len(reqs))
	for i, r := range reqs {
		s[i] = r.Field + string(r.Operator) + r.Value
	}
	return strings.Join(s, ",")
}

func labelString(reqs labels.Requirements) string {
	s := make([]string, len(reqs))
	for i := range reqs {
		s[i] = reqs[i].String()
	}
	return strings.Join(s, ",")
}

// TestValidation: upstream's 422s, by field path.
func TestValidation(t *testing.T) {
	withMeta := resourceSAR("get")
	withMeta.Name = "x"
	both := resourceSAR("get")
	both.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"}
	badSelector := resourceSAR("get")
	badSelector.Spec.ResourceAttributes.LabelSelector = &authorizationv1.LabelSelectorAttributes{}
	for name, tc := range map[string]struct {
		sar  *authorizationv1.SubjectAccessReview
		want string
	}{
		"no attributes":       {&authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "u"}}, "spec.resourceAttributes"},
		"both attributes":     {both, "spec.nonResourceAttributes"},
		"no user nor group":   {&authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{}}}, "spec.user"},
		"metadata":            {withMeta, "metadata"},
		"empty labelSelector": {badSelector, "spec.resourceAttributes.labelSelector.requirements"},
	} {
		t.Run(name, func(t *testing.T) {
			errs := ValidateSubjectAccessReview(tc.sar)
			if len(errs) != 1 || errs[0].Field != tc.want {
				t.Errorf("errors %v, want one at %s", errs, tc.want)
			}
			_, err := NewSubjectAccessReviewREST(&fakeAuthorizer{}).Create(context.Background(), tc.sar, nil, nil)
			if !apierrors.IsInvalid(err) {
				t.Errorf("create: %v, want 422", err)
			}
		})
	}
}

// TestSelfSubjectAccessReview: the requester is the user asked about; no
// user in the context is a 400.
func TestSelfSubjectAccessReview(t *testing.T) {
	az := &fakeAuthorizer{}
	r := NewSelfSubjectAccessReviewREST(az)
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}}}
	ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "bob"})
	out, err := r.Create(ctx, ssar.DeepCopy(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.(*authorizationv1.SelfSubjectAccessReview).Status.Allowed || az.asked.GetUser().GetName() != "bob" ||
		az.asked.IsResourceRequest() || az.asked.GetPath() != "/healthz" {
		t.Errorf("review %+v, asked %+v", out, az.asked)
	}
	if _, err := r.Create(context.Background(), ssar.DeepCopy(), nil, nil); !apierrors.IsBadRequest(err) {
		t.Errorf("no user: %v, want 400", err)
	}
}

// TestLocalSubjectAccessReview: the namespace must be the request's and
// the attributes'; non-resource attributes are refused.
func TestLocalSubjectAccessReview(t *testing.T) {
	r := NewLocalSubjectAccessReviewREST(&fakeAuthorizer{})
	local := func(ns, attrNS string) *authorizationv1.LocalSubjectAccessReview {
		s := resourceSAR("get")
		s.Spec.ResourceAttributes.Namespace = attrNS
		return &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: s.Spec}
	}
	inNS := genericapirequest.WithNamespace(context.Background(), "ns")
	out, err := r.Create(inNS, local("ns", "ns"), nil, nil)
	if err != nil || !out.(*authorizationv1.LocalSubjectAccessReview).Status.Allowed {
		t.Errorf("same namespace: %+v %v", out, err)
	}
	if _, err := r.Create(inNS, local("other", "other"), nil, nil); !apierrors.IsBadRequest(err) {
		t.Errorf("other request namespace: %v, want 400", err)
	}
	if _, err := r.Create(inNS, local("ns", "other"), nil, nil); !apierrors.IsInvalid(err) {
		t.Errorf("attributes in another namespace: %v, want 422", err)
	}
	nonResource := &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "u",
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"}}}
	if _, err := r.Create(inNS, nonResource, nil, nil); !apierrors.IsInvalid(err) {
		t.Errorf("non-resource: %v, want 422", err)
	}
}
