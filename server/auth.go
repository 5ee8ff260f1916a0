package server

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/utils/clock"
)

// The identities and groups of the API server's authentication.
const (
	anonymousUser        = "system:anonymous"
	groupUnauthenticated = "system:unauthenticated"
	groupAuthenticated   = "system:authenticated"
)

// DefaultTokenCacheTTL is how long a token review's answer is reused, the
// kubelet's authentication.webhook.cacheTTL.
const DefaultTokenCacheTTL = 2 * time.Minute

// errNoCredentials is the authentication error when nothing identified the
// client and anonymous requests are not allowed.
var errNoCredentials = errors.New("no client certificate or bearer token was accepted and anonymous requests are disabled")

// errInvalidToken is the error for a bearer token the API server did not
// authenticate (the API server's words).
var errInvalidToken = errors.New("invalid bearer token")

// User is an authenticated identity, as the API server's user.Info.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// TokenReviewer reviews bearer tokens with the API server's TokenReview
// (apiclient.Client implements it). Safe for concurrent use.
type TokenReviewer interface {
	CreateTokenReview(ctx context.Context, tr *authnv1.TokenReview) (*authnv1.TokenReview, error)
}

// AuthnConfig configures an Authenticator, with the kubelet's flags.
type AuthnConfig struct {
	// ClientCAs verifies client certificates (--client-ca-file): a client
	// whose certificate chains to one of them is the user named by its
	// common name, in the groups named by its organizations. nil: client
	// certificates are not used.
	ClientCAs *x509.CertPool
	// Tokens reviews bearer tokens (--authentication-token-webhook); nil:
	// bearer tokens are ignored.
	Tokens TokenReviewer
	// TokenCacheTTL is how long a review's answer, authenticated or not,
	// is reused (DefaultTokenCacheTTL when 0; negative: never). Errors
	// are not cached.
	TokenCacheTTL time.Duration
	// Anonymous lets a request that presents no credentials through as
	// system:anonymous in group system:unauthenticated (--anonymous-auth).
	// Credentials that fail are never anonymous.
	Anonymous bool
	// Clock times certificate validity and the cache (real when nil).
	Clock clock.PassiveClock
}

// Authenticator identifies the client of a request as the kubelet's
// delegating authenticator does: a client certificate, then a bearer
// token; an authenticated user is also in system:authenticated. Safe for
// concurrent use.
type Authenticator struct {
	cfg    AuthnConfig
	tokens *ttlCache[*User] // nil value: not authenticated
}

// NewAuthenticator returns an Authenticator for cfg. Without any method
// (no client CAs, no token reviews, no anonymous requests) nobody could
// get in: that is an error, as for the kubelet.
func NewAuthenticator(cfg AuthnConfig) (*Authenticator, error) {
	if cfg.ClientCAs == nil && cfg.Tokens == nil && !cfg.Anonymous {
		return nil, errors.New("no authentication method configured: set --client-ca-file or --authentication-token-webhook, or allow --anonymous-auth")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.TokenCacheTTL == 0 {
		cfg.TokenCacheTTL = DefaultTokenCacheTTL
	}
	return &Authenticator{cfg: cfg, tokens: newTTLCache[*User](cfg.Clock, maxCacheEntries)}, nil
}

// Authenticate returns the request's user, or an error that is answered
// with 401. A bearer token that was accepted is removed from r, so that it
// is never passed on (to the runtime's streaming server).
func (a *Authenticator) Authenticate(r *http.Request) (*User, error) {
	var errs []error
	for _, method := range []func(*http.Request) (*User, error){a.clientCert, a.bearerToken} {
		u, err := method(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if u != nil {
			return withAuthenticatedGroup(u), nil
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if !a.cfg.Anonymous {
		return nil, errNoCredentials
	}
	return &User{Name: anonymousUser, Groups: []string{groupUnauthenticated}}, nil
}

// clientCert verifies the request's client certificate, as the API
// server's x509 authenticator: nil, nil without one (or without a common
// name).
func (a *Authenticator) clientCert(r *http.Request) (*User, error) {
	if a.cfg.ClientCAs == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, nil
	}
	certs := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{
		Roots:       a.cfg.ClientCAs,
		CurrentTime: a.cfg.Clock.Now(),
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(certs) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return nil, fmt.Errorf("verify client certificate %q: %w", certs[0].Subject.CommonName, err)
	}
	if certs[0].Subject.CommonName == "" {
		return nil, nil
	}
	return &User{Name: certs[0].Subject.CommonName, Groups: slices.Clone(certs[0].Subject.Organization)}, nil
}

// bearerToken reviews the request's bearer token: nil, nil without one,
// errInvalidToken for a token the API server did not accept.
func (a *Authenticator) bearerToken(r *http.Request) (*User, error) {
	if a.cfg.Tokens == nil {
		return nil, nil
	}
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return nil, nil
	}
	u, err := a.reviewToken(r.Context(), token)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, errInvalidToken
	}
	r.Header.Del("Authorization")
	return u, nil
}

// bearer returns the token of an "Authorization: Bearer TOKEN" header.
func bearer(header string) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(header), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// reviewToken asks the API server who token is, or answers from the
// cache: the user, nil for a token that is not authenticated, or an error
// when the review failed (not cached).
func (a *Authenticator) reviewToken(ctx context.Context, token string) (*User, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if u, ok := a.tokens.get(key); ok {
		return u, nil
	}
	res, err := a.cfg.Tokens.CreateTokenReview(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}})
	if err != nil {
		return nil, fmt.Errorf("review bearer token: %w", err)
	}
	st := res.Status
	if !st.Authenticated && st.Error != "" {
		return nil, fmt.Errorf("review bearer token: %s", st.Error)
	}
	var u *User
	if st.Authenticated {
		u = &User{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
		for k, v := range st.User.Extra {
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[k] = []string(v)
		}
	}
	if a.cfg.TokenCacheTTL > 0 {
		a.tokens.add(key, u, a.cfg.TokenCacheTTL)
	}
	return u, nil
}

// withAuthenticatedGroup adds system:authenticated to an authenticated
// user's groups, as the API server's AuthenticatedGroupAdder.
func withAuthenticatedGroup(u *User) *User {
	if u.Name == anonymousUser || slices.Contains(u.Groups, groupAuthenticated) || slices.Contains(u.Groups, groupUnauthenticated) {
		return u
	}
	cp := *u
	cp.Groups = append(slices.Clone(u.Groups), groupAuthenticated)
	return &cp
}
