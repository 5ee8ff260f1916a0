package apisource

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// TokenAPI is the API server as the token manager uses it.
type TokenAPI interface {
	CreateToken(ctx context.Context, namespace, name string, tr *authnv1.TokenRequest) (*authnv1.TokenRequest, error)
}

// Token rotation, as the kubelet's token manager: a token is renewed once
// 80 % of its life passed, or 24 h after it was issued.
const (
	tokenMaxTTL        = 24 * time.Hour
	tokenRefreshPct    = 20
	tokenCheckInterval = time.Minute
)

// TokenManager issues the service account tokens of projected volumes
// through the TokenRequest API, bound to their pod, and caches each one
// until it needs renewing. Its Run signals Changes when a cached token is
// due, so that the volume manager's refresh writes a new one. Safe for
// concurrent use.
type TokenManager struct {
	api   TokenAPI
	clock clock.WithTicker
	log   *slog.Logger
	// Offline, when set before use, saves every token issued, and gives
	// a saved one, while valid, when the API server does not answer.
	Offline *OfflineCopy

	mu     sync.Mutex
	tokens map[tokenKey]*authnv1.TokenRequest
	subs   []chan struct{}
}

type tokenKey struct {
	namespace, serviceAccount, audience string
	expiration                          int64
	pod                                 types.UID
}

// NewTokenManager returns a manager requesting tokens through api.
func NewTokenManager(api TokenAPI, c clock.WithTicker, log *slog.Logger) *TokenManager {
	if c == nil {
		c = clock.RealClock{}
	}
	return &TokenManager{api: api, clock: c, log: log, tokens: map[tokenKey]*authnv1.TokenRequest{}}
}

// Token returns a token of pod's service account for audience ("": the
// API server's audiences) living expirationSeconds, bound to the pod: the
// cached one while fresh, else a new one (the cached one, while still
// valid, if the request fails). Blocking (one API call at most).
func (m *TokenManager) Token(pod *v1.Pod, audience string, expirationSeconds int64) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	k := tokenKey{pod.Namespace, sa, audience, expirationSeconds, pod.UID}
	now := m.clock.Now()
	m.mu.Lock()
	cached := m.tokens[k]
	m.mu.Unlock()
	if cached != nil && !tokenNeedsRefresh(cached, now) {
		return cached.Status.Token, nil
	}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		ExpirationSeconds: &expirationSeconds,
		BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		tr.Spec.Audiences = []string{audience}
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiCallTimeout)
	defer cancel()
	got, err := m.api.CreateToken(ctx, pod.Namespace, sa, tr)
	if err != nil {
		if cached != nil && now.Before(cached.Status.ExpirationTimestamp.Time) {
			m.log.Warn("renewing a service account token; using the current one", "pod", nsName(pod.Namespace, pod.Name), "err", err)
			return cached.Status.Token, nil
		}
		if cached == nil {
			return m.offlineToken(k, pod, now, err)
		}
		return "", fmt.Errorf("token of service account %q: %w", sa, err)
	}
	if got.Spec.ExpirationSeconds == nil {
		got.Spec.ExpirationSeconds = &expirationSeconds
	}
	m.mu.Lock()
	m.tokens[k] = got
	m.mu.Unlock()
	m.Offline.saveToken(k, got, now)
	return got.Status.Token, nil
}

// offlineToken is the offline copy's token of k when the API server did
// not issue one (reqErr): cached while valid; an expired one is an error
// saying when it expired (the pod's FailedMount event).
func (m *TokenManager) offlineToken(k tokenKey, pod *v1.Pod, now time.Time, reqErr error) (string, error) {
	saved, ok := m.Offline.token(k)
	switch {
	case !ok:
		return "", fmt.Errorf("token of service account %q: %w", k.serviceAccount, reqErr)
	case !now.Before(saved.Status.ExpirationTimestamp.Time):
		return "", fmt.Errorf("token of service account %q: the offline copy's token expired at %s, and the API server does not issue a new one: %w",
			k.serviceAccount, saved.Status.ExpirationTimestamp.UTC().Format(time.RFC3339), reqErr)
	}
	m.log.Warn("the API server does not issue a service account token; using the offline copy's", "pod", nsName(pod.Namespace, pod.Name),
		"expires", saved.Status.ExpirationTimestamp.UTC().Format(time.RFC3339), "err", reqErr)
	m.mu.Lock()
	m.tokens[k] = saved
	m.mu.Unlock()
	return saved.Status.Token, nil
}

// tokenNeedsRefresh: 80 % of the requested life passed, or 24 h since
// issue, both counted back from the expiration (pkg/kubelet/token
// requiresRefresh, without its jitter; so a token the API server extended
// to a year, the default kube-api-access volume's, is kept as long as the
// kubelet keeps it). Pure.
func tokenNeedsRefresh(tr *authnv1.TokenRequest, now time.Time) bool {
	if tr.Spec.ExpirationSeconds == nil {
		return false
	}
	life := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	issued := exp.Add(-life)
	return now.After(issued.Add(tokenMaxTTL)) || now.After(exp.Add(-life*tokenRefreshPct/100))
}

// Changes returns a channel signalled (coalesced) when a cached token is
// due for renewal. Safe for concurrent use.
func (m *TokenManager) Changes() <-chan struct{} {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.subs = append(m.subs, ch)
	m.mu.Unlock()
	return ch
}

// Run checks the cached tokens every minute until ctx is done: it drops
// expired ones and signals Changes when one is due or expired. Blocking.
func (m *TokenManager) Run(ctx context.Context) {
	t := m.clock.NewTicker(tokenCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if m.check(m.clock.Now()) {
			m.mu.Lock()
			for _, ch := range m.subs {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			m.mu.Unlock()
		}
	}
}

// check drops expired tokens and reports whether one needs renewing or
// expired (its volume is to be written again: a new token, or the
// FailedMount event saying why there is none).
func (m *TokenManager) check(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	due := false
	for k, tr := range m.tokens {
		if !now.Before(tr.Status.ExpirationTimestamp.Time) {
			delete(m.tokens, k)
			due = true
			continue
		}
		due = due || tokenNeedsRefresh(tr, now)
	}
	return due
}
