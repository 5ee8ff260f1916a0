package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/utils/clock"
)

// The kubelet's webhook authorization cache lifetimes
// (authorization.webhook.cacheAuthorizedTTL and cacheUnauthorizedTTL).
const (
	DefaultAuthorizedCacheTTL   = 5 * time.Minute
	DefaultUnauthorizedCacheTTL = 30 * time.Second
)

// Attributes describe a request to the kubelet API for authorization, as
// the kubelet's authorizer.AttributesRecord: always a resource request on
// the node (apiVersion v1, resource nodes, the node's name).
type Attributes struct {
	User        *User
	Verb        string
	APIVersion  string
	Resource    string
	Subresource string
	Name        string
	Path        string
}

// Authorizer decides whether a request may proceed. Safe for concurrent
// use.
type Authorizer interface {
	// Authorize reports whether a is allowed, with the reason given by
	// whoever decided. An error means no decision could be made
	// (answered with 500).
	Authorize(ctx context.Context, a Attributes) (allowed bool, reason string, err error)
}

// AlwaysAllow allows everything (--authorization-mode AlwaysAllow, the
// kubelet's default).
type AlwaysAllow struct{}

// Authorize implements Authorizer.
func (AlwaysAllow) Authorize(context.Context, Attributes) (bool, string, error) { return true, "", nil }

// SubjectAccessReviewer asks the API server's SubjectAccessReview
// (apiclient.Client implements it). Safe for concurrent use.
type SubjectAccessReviewer interface {
	CreateSubjectAccessReview(ctx context.Context, sar *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error)
}

// WebhookConfig configures a WebhookAuthorizer.
type WebhookConfig struct {
	// Reviews asks the API server. Required.
	Reviews SubjectAccessReviewer
	// AllowTTL and DenyTTL are how long an allowed and a denied answer
	// are reused (DefaultAuthorizedCacheTTL, DefaultUnauthorizedCacheTTL
	// when 0; negative: never). Errors are not cached.
	AllowTTL, DenyTTL time.Duration
	// Clock times the cache (real when nil).
	Clock clock.PassiveClock
}

// WebhookAuthorizer asks the API server with a SubjectAccessReview
// (--authorization-mode Webhook), as the kubelet's delegating authorizer.
type WebhookAuthorizer struct {
	cfg   WebhookConfig
	cache *ttlCache[authzv1.SubjectAccessReviewStatus]
}

// NewWebhookAuthorizer returns a WebhookAuthorizer for cfg.
func NewWebhookAuthorizer(cfg WebhookConfig) (*WebhookAuthorizer, error) {
	if cfg.Reviews == nil {
		return nil, errors.New("webhook authorization needs an API server client")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.AllowTTL == 0 {
		cfg.AllowTTL = DefaultAuthorizedCacheTTL
	}
	if cfg.DenyTTL == 0 {
		cfg.DenyTTL = DefaultUnauthorizedCacheTTL
	}
	return &WebhookAuthorizer{cfg: cfg, cache: newTTLCache[authzv1.SubjectAccessReviewStatus](cfg.Clock, maxCacheEntries)}, nil
}

// Authorize implements Authorizer: the review's spec (user, groups,
// extra, and the resource attributes) is also the cache key. A review
// that both allows and denies is an error.
func (w *WebhookAuthorizer) Authorize(ctx context.Context, a Attributes) (bool, string, error) {
	spec := reviewSpec(a)
	keyBytes, err := json.Marshal(spec)
	if err != nil {
		return false, "", fmt.Errorf("encode access review: %w", err)
	}
	key := string(keyBytes)
	st, ok := w.cache.get(key)
	if !ok {
		res, err := w.cfg.Reviews.CreateSubjectAccessReview(ctx, &authzv1.SubjectAccessReview{Spec: spec})
		if err != nil {
			return false, "", fmt.Errorf("subject access review: %w", err)
		}
		st = res.Status
		ttl := w.cfg.DenyTTL
		if st.Allowed {
			ttl = w.cfg.AllowTTL
		}
		if ttl > 0 {
			w.cache.add(key, st, ttl)
		}
	}
	if st.Allowed && st.Denied {
		return false, st.Reason, errors.New("webhook subject access review returned both allow and deny response")
	}
	return st.Allowed, st.Reason, nil
}

// reviewSpec is the SubjectAccessReview spec for a, as the API server's
// webhook authorizer builds it.
func reviewSpec(a Attributes) authzv1.SubjectAccessReviewSpec {
	var spec authzv1.SubjectAccessReviewSpec
	if u := a.User; u != nil {
		spec.User, spec.UID, spec.Groups = u.Name, u.UID, u.Groups
		if u.Extra != nil {
			spec.Extra = map[string]authzv1.ExtraValue{}
			for k, v := range u.Extra {
				spec.Extra[k] = authzv1.ExtraValue(v)
			}
		}
	}
	spec.ResourceAttributes = &authzv1.ResourceAttributes{
		Verb: a.Verb, Version: a.APIVersion, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
	}
	return spec
}

// RequestAttributes returns what the kubelet authorizes a request to its
// API by (pkg/kubelet/server/auth.go, with KubeletFineGrainedAuthz, on by
// default since 1.33): the verb from the method (POST create, GET get, PUT
// update, PATCH patch, DELETE delete, others none), resource nodes, the
// node's name, and the subresource from the path: /stats stats, /metrics
// metrics, /logs log, /checkpoint checkpoint, /statusz statusz, /flagz
// configz, everything else proxy. /pods and /runningpods are tried as pods
// first, /healthz as healthz, /configz as configz, each then as proxy: the
// request is allowed if any is.
func RequestAttributes(node string, u *User, r *http.Request) []Attributes {
	path := r.URL.Path
	var subresources []string
	switch {
	case isSubpath(path, "/pods"), isSubpath(path, "/runningpods/"):
		subresources = append(subresources, "pods")
	case isSubpath(path, "/healthz"):
		subresources = append(subresources, "healthz")
	case isSubpath(path, "/configz"):
		subresources = append(subresources, "configz")
	}
	switch {
	case isSubpath(path, "/stats/"):
		subresources = append(subresources, "stats")
	case isSubpath(path, "/metrics"):
		subresources = append(subresources, "metrics")
	case isSubpath(path, "/logs/"):
		subresources = append(subresources, "log")
	case isSubpath(path, "/checkpoint/"):
		subresources = append(subresources, "checkpoint")
	case isSubpath(path, "/statusz"):
		subresources = append(subresources, "statusz")
	case isSubpath(path, "/flagz"):
		subresources = append(subresources, "configz")
	default:
		subresources = append(subresources, "proxy")
	}
	attrs := make([]Attributes, 0, len(subresources))
	for _, sub := range subresources {
		attrs = append(attrs, Attributes{
			User: u, Verb: apiVerb(r.Method), APIVersion: "v1", Resource: "nodes",
			Subresource: sub, Name: node, Path: path,
		})
	}
	return attrs
}

// apiVerb maps an HTTP method to the API verb the kubelet authorizes.
func apiVerb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodGet:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// isSubpath reports whether subpath is path or below it.
func isSubpath(subpath, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return subpath == path || (strings.HasPrefix(subpath, path) && subpath[len(path)] == '/')
}
