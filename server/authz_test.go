package server

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestRequestAttributes checks the kubelet's mapping of requests to
// authorization attributes (pkg/kubelet/server/auth.go, fine-grained, the
// 1.34 default): verb by method, subresource(s) by path.
func TestRequestAttributes(t *testing.T) {
	tests := []struct {
		method, path string
		wantVerb     string
		wantSubs     []string
	}{
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", "get", []string{"pods", "proxy"}},
		{"GET", "/podsx", "get", []string{"proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/healthz/ping", "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/resource", "get", []string{"metrics"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"POST", "/checkpoint/ns/pod/c", "create", []string{"checkpoint"}},
		{"GET", "/statusz", "get", []string{"statusz"}},
		{"GET", "/flagz", "get", []string{"configz"}},
		{"GET", "/containerLogs/ns/pod/c", "get", []string{"proxy"}},
		{"POST", "/exec/ns/pod/c", "create", []string{"proxy"}},
		{"GET", "/exec/ns/pod/c", "get", []string{"proxy"}},
		{"POST", "/attach/ns/pod/c", "create", []string{"proxy"}},
		{"POST", "/portForward/ns/pod", "create", []string{"proxy"}},
		{"POST", "/run/ns/pod/c", "create", []string{"proxy"}},
		{"PUT", "/x", "update", []string{"proxy"}},
		{"PATCH", "/x", "patch", []string{"proxy"}},
		{"DELETE", "/x", "delete", []string{"proxy"}},
		{"HEAD", "/pods", "", []string{"pods", "proxy"}},
		{"GET", "/pods?watch=true", "get", []string{"pods", "proxy"}},
	}
	u := &User{Name: "alice"}
	for _, tt := range tests {
		attrs := RequestAttributes("node1", u, httptest.NewRequest(tt.method, tt.path, nil))
		var subs []string
		for _, a := range attrs {
			subs = append(subs, a.Subresource)
			want := Attributes{User: u, Verb: tt.wantVerb, APIVersion: "v1", Resource: "nodes", Subresource: a.Subresource, Name: "node1", Path: a.Path}
			if a != want || a.Path != httptest.NewRequest(tt.method, tt.path, nil).URL.Path {
				t.Errorf("%s %s: attributes %+v, want %+v", tt.method, tt.path, a, want)
			}
		}
		if !reflect.DeepEqual(subs, tt.wantSubs) {
			t.Errorf("%s %s: subresources %v, want %v", tt.method, tt.path, subs, tt.wantSubs)
		}
	}
}

// fakeAccessReviews answers SubjectAccessReviews with status and records
// the specs it got.
type fakeAccessReviews struct {
	mu     sync.Mutex
	status authzv1.SubjectAccessReviewStatus
	err    error
	specs  []authzv1.SubjectAccessReviewSpec
}

func (f *fakeAccessReviews) CreateSubjectAccessReview(_ context.Context, sar *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.specs = append(f.specs, sar.Spec)
	if f.err != nil {
		return nil, f.err
	}
	out := sar.DeepCopy()
	out.Status = f.status
	return out, nil
}

func (f *fakeAccessReviews) set(st authzv1.SubjectAccessReviewStatus, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.err = st, err
}

func (f *fakeAccessReviews) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.specs)
}

// TestWebhookAuthorizerRequest checks the SubjectAccessReview the
// kubelet's webhook mode sends.
func TestWebhookAuthorizerRequest(t *testing.T) {
	reviews := &fakeAccessReviews{status: authzv1.SubjectAccessReviewStatus{Allowed: true, Reason: "RBAC: allowed"}}
	w, err := NewWebhookAuthorizer(WebhookConfig{Reviews: reviews})
	if err != nil {
		t.Fatal(err)
	}
	u := &User{Name: "alice", UID: "u-1", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"scope": {"x"}}}
	attrs := RequestAttributes("node1", u, httptest.NewRequest("POST", "/exec/default/web/app", nil))
	allowed, reason, err := w.Authorize(context.Background(), attrs[0])
	if !allowed || reason != "RBAC: allowed" || err != nil {
		t.Fatalf("Authorize = %v, %q, %v", allowed, reason, err)
	}
	want := authzv1.SubjectAccessReviewSpec{
		User: "alice", UID: "u-1", Groups: []string{"dev", "system:authenticated"},
		Extra: map[string]authzv1.ExtraValue{"scope": {"x"}},
		ResourceAttributes: &authzv1.ResourceAttributes{
			Verb: "create", Version: "v1", Resource: "nodes", Subresource: "proxy", Name: "node1",
		},
	}
	if len(reviews.specs) != 1 || !reflect.DeepEqual(reviews.specs[0], want) {
		t.Errorf("review specs = %+v, want [%+v]", reviews.specs, want)
	}
}

// TestWebhookAuthorizerCache checks the kubelet's cache lifetimes: allowed
// answers 5 minutes, denied ones 30 seconds, errors never; and that an
// answer both allowing and denying is an error.
func TestWebhookAuthorizerCache(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	reviews := &fakeAccessReviews{}
	w, err := NewWebhookAuthorizer(WebhookConfig{Reviews: reviews, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	allow := authzv1.SubjectAccessReviewStatus{Allowed: true}
	deny := authzv1.SubjectAccessReviewStatus{Denied: true, Reason: "no"}
	alice := Attributes{User: &User{Name: "alice"}, Verb: "get", APIVersion: "v1", Resource: "nodes", Subresource: "stats", Name: "n"}
	bob := alice
	bob.User = &User{Name: "bob"}
	steps := []struct {
		name        string
		advance     time.Duration
		attrs       Attributes
		answer      authzv1.SubjectAccessReviewStatus
		answerErr   error
		wantAllowed bool
		wantErr     bool
		wantReviews int
	}{
		{name: "alice allowed", attrs: alice, answer: allow, wantAllowed: true, wantReviews: 1},
		{name: "alice cached though the answer changed", advance: 4 * time.Minute, attrs: alice, answer: deny, wantAllowed: true, wantReviews: 1},
		{name: "bob denied", attrs: bob, answer: deny, wantReviews: 2},
		{name: "bob's denial cached", advance: 29 * time.Second, attrs: bob, answer: allow, wantReviews: 2},
		{name: "bob's denial expires after 30s", advance: 2 * time.Second, attrs: bob, answer: allow, wantAllowed: true, wantReviews: 3},
		{name: "alice's allowance expires after 5m", advance: 70 * time.Second, attrs: alice, answer: deny, wantReviews: 4},
		{name: "review error", advance: time.Hour, attrs: alice, answerErr: errors.New("down"), wantErr: true, wantReviews: 5},
		{name: "review error not cached", attrs: alice, answer: allow, wantAllowed: true, wantReviews: 6},
		{name: "allowed and denied", advance: time.Hour, attrs: alice, answer: authzv1.SubjectAccessReviewStatus{Allowed: true, Denied: true},
			wantErr: true, wantReviews: 7},
	}
	for _, st := range steps {
		clk.SetTime(clk.Now().Add(st.advance))
		reviews.set(st.answer, st.answerErr)
		allowed, _, err := w.Authorize(context.Background(), st.attrs)
		if allowed != st.wantAllowed || (err != nil) != st.wantErr || reviews.count() != st.wantReviews {
			t.Errorf("%s: Authorize = %v, %v with %d reviews; want %v (error %v) with %d",
				st.name, allowed, err, reviews.count(), st.wantAllowed, st.wantErr, st.wantReviews)
		}
	}
}

// TestWebhookAuthorizerNeedsClient checks the error without an API server.
func TestWebhookAuthorizerNeedsClient(t *testing.T) {
	if _, err := NewWebhookAuthorizer(WebhookConfig{}); err == nil {
		t.Error("NewWebhookAuthorizer without reviews: no error")
	}
}
