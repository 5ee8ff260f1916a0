package tokenreview

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// fakeAuthn knows the token "good" (for audiences api and other) and
// fails "broken"; it records the audiences it was asked for.
type fakeAuthn struct{ asked []string }

func (f *fakeAuthn) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	f.asked, _ = authenticator.AudiencesFrom(req.Context())
	switch req.Header.Get("Authorization") {
	case "Bearer good":
		auds := authenticator.Audiences{"api", "other"}.Intersect(f.asked)
		if len(f.asked) == 0 {
			auds = nil
		}
		return &authenticator.Response{User: &user.DefaultInfo{Name: "u", UID: "1", Groups: []string{"g"},
			Extra: map[string][]string{"k": {"v"}}}, Audiences: auds}, true, nil
	case "Bearer wrong-audience":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "u"}, Audiences: authenticator.Audiences{"elsewhere"}}, true, nil
	case "Bearer broken":
		return nil, false, errors.New("service account token has expired")
	}
	return nil, false, errors.New("invalid bearer token")
}

// TestCreate: upstream's storage.go behaviour: 400 without a token or
// with a namespace, the API audiences by default, the authenticator's
// answer copied into status, a 500 for an identity of other audiences.
func TestCreate(t *testing.T) {
	ctx := context.Background()
	review := func(token string, auds ...string) *authenticationv1.TokenReview {
		return &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}
	}
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		in        *authenticationv1.TokenReview
		wantAsked []string
		want      authenticationv1.TokenReviewStatus
		wantErr   func(error) bool
	}{
		{name: "default audiences", in: review("good"), wantAsked: []string{"api"},
			want: authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"api"},
				User: authenticationv1.UserInfo{Username: "u", UID: "1", Groups: []string{"g"},
					Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}},
		{name: "audiences asked for", in: review("good", "other"), wantAsked: []string{"other"},
			want: authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"other"},
				User: authenticationv1.UserInfo{Username: "u", UID: "1", Groups: []string{"g"},
					Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}},
		{name: "unknown token", in: review("bogus"), wantAsked: []string{"api"},
			want: authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}},
		{name: "authenticator error", in: review("broken"), wantAsked: []string{"api"},
			want: authenticationv1.TokenReviewStatus{Error: "service account token has expired"}},
		{name: "identity for other audiences: 500", in: review("wrong-audience"), wantErr: apierrors.IsInternalError},
		{name: "no token: 400", in: review(""), wantErr: apierrors.IsBadRequest},
		{name: "namespace: 400", ctx: genericapirequest.WithNamespace(ctx, "ns"), in: review("good"), wantErr: apierrors.IsBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			authn := &fakeAuthn{}
			r := &REST{Authenticator: authn, APIAudiences: []string{"api"}}
			c := ctx
			if tc.ctx != nil {
				c = tc.ctx
			}
			out, err := r.Create(c, tc.in, nil, nil)
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*authenticationv1.TokenReview).Status
			if !slices.Equal(authn.asked, tc.wantAsked) {
				t.Errorf("asked audiences %v, want %v", authn.asked, tc.wantAsked)
			}
			if got.Authenticated != tc.want.Authenticated || got.Error != tc.want.Error ||
				!slices.Equal(got.Audiences, tc.want.Audiences) || got.User.Username != tc.want.User.Username ||
				got.User.UID != tc.want.User.UID || !slices.Equal(got.User.Groups, tc.want.User.Groups) ||
				len(got.User.Extra) != len(tc.want.User.Extra) {
				t.Errorf("status %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCreateWithoutAuthenticator: the review comes back as sent.
func TestCreateWithoutAuthenticator(t *testing.T) {
	out, err := (&REST{}).Create(context.Background(), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: "x"}}, nil, nil)
	if err != nil || out.(*authenticationv1.TokenReview).Status.Authenticated {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := (&REST{}).Create(context.Background(), &authenticationv1.SelfSubjectReview{}, nil, nil); err == nil ||
		!strings.Contains(err.Error(), "not a TokenReview") {
		t.Fatalf("wrong kind: %v", err)
	}
}
