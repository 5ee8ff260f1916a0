package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	tokenjwt "k8s.io/apiserver/pkg/authentication/token/jwt"
)

// leeway is go-jose's jwt.DefaultLeeway, upstream's tolerance for clock
// skew on exp, nbf and iat, and for objects being deleted.
const leeway = time.Minute

// Objects reads the objects a token names, bypassing authorization. An
// error (not found included) invalidates the token.
type Objects interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// Authenticator authenticates bearer tokens signed by Key for Issuer
// (k8s.io/apiserver's authenticator.Token), as upstream's
// JWTTokenAuthenticator with its service-account validator: a token of
// another issuer, or not a JWT, is no opinion (another authenticator may
// know it); one of ours is an error (401) when its signature, times or
// audiences do not hold or the service account, or the pod or secret it
// is bound to, is gone, has another UID or was deleted more than a minute
// ago.
type Authenticator struct {
	Key    *Key
	Issuer string
	// Audiences are the API's audiences (kube-apiserver's --api-audiences):
	// a token must be for one of them, or for those a request's context
	// names; a token without audiences is taken as for these.
	Audiences authenticator.Audiences
	Objects   Objects
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

var _ authenticator.Token = (*Authenticator)(nil)

// AuthenticateToken implements authenticator.Token.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	var unverified Claims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &unverified); err != nil || unverified.Issuer != a.Issuer {
		return nil, false, nil
	}
	now := a.now()
	var c Claims
	_, err := jwt.ParseWithClaims(token, &c, a.key,
		jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}), jwt.WithLeeway(leeway),
		jwt.WithTimeFunc(func() time.Time { return now }), jwt.WithIssuedAt(), jwt.WithIssuer(a.Issuer))
	if err != nil {
		return nil, false, validationError(err)
	}
	auds, err := a.audiences(ctx, authenticator.Audiences(c.Audience))
	if err != nil {
		return nil, false, err
	}
	info, err := a.validate(ctx, now, &c)
	if err != nil {
		return nil, false, err
	}
	return &authenticator.Response{User: info.UserInfo(), Audiences: auds}, true, nil
}

func (a *Authenticator) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// key is the parser's key function: our one key, whatever the kid.
func (a *Authenticator) key(*jwt.Token) (any, error) {
	return &a.Key.Private.PublicKey, nil
}

// validationError words a parse or claims failure as upstream does.
func validationError(err error) error {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return errors.New("service account token is issued in the future")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return errors.New("service account token: invalid signature")
	}
	return fmt.Errorf("service account token claims could not be validated: %w", err)
}

// audiences intersects the token's audiences with the request's (or the
// API's), as upstream's authenticator.
func (a *Authenticator) audiences(ctx context.Context, token authenticator.Audiences) (authenticator.Audiences, error) {
	if len(token) == 0 {
		token = a.Audiences
	}
	requested, ok := authenticator.AudiencesFrom(ctx)
	if !ok {
		requested = a.Audiences
	}
	auds := token.Intersect(requested)
	if len(auds) == 0 && len(a.Audiences) != 0 {
		return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", token, requested)
	}
	return auds, nil
}

// validate checks that the objects the token names still exist with their
// UIDs (upstream's validator.Validate) and returns the identity.
func (a *Authenticator) validate(ctx context.Context, now time.Time, c *Claims) (*apiserverserviceaccount.ServiceAccountInfo, error) {
	deletedBefore := now.Add(-leeway)
	k := c.Kubernetes
	ns := k.Namespace
	sa, err := a.Objects.ServiceAccount(ctx, ns, k.Svcacct.Name)
	if err != nil {
		return nil, err
	}
	if string(sa.UID) != k.Svcacct.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, k.Svcacct.UID)
	}
	if deleted(sa.DeletionTimestamp, deletedBefore) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", ns, k.Svcacct.Name)
	}
	if k.Secret != nil {
		secret, err := a.Objects.Secret(ctx, ns, k.Secret.Name)
		if err != nil {
			return nil, errors.New("service account token has been invalidated")
		}
		if string(secret.UID) != k.Secret.UID {
			return nil, fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", secret.UID, k.Secret.UID)
		}
		if deleted(secret.DeletionTimestamp, deletedBefore) {
			return nil, errors.New("service account token has been invalidated")
		}
	}
	info := &apiserverserviceaccount.ServiceAccountInfo{
		Namespace: ns, Name: k.Svcacct.Name, UID: k.Svcacct.UID,
		CredentialID: tokenjwt.CredentialIDForJTI(c.ID),
	}
	if k.Pod != nil {
		pod, err := a.Objects.Pod(ctx, ns, k.Pod.Name)
		if err != nil {
			return nil, errors.New("service account token has been invalidated")
		}
		if string(pod.UID) != k.Pod.UID {
			return nil, fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", pod.UID, k.Pod.UID)
		}
		if deleted(pod.DeletionTimestamp, deletedBefore) {
			return nil, errors.New("service account token has been invalidated")
		}
		info.PodName, info.PodUID = k.Pod.Name, k.Pod.UID
		if k.Node != nil {
			info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
		}
	} else if k.Node != nil {
		return nil, errors.New("token is bound to a Node object, which this server does not issue")
	}
	return info, nil
}

// deleted: deleting since before the deadline (upstream's "consider things
// deleted prior to now()-leeway to be invalid").
func deleted(ts *metav1.Time, before time.Time) bool {
	return ts != nil && ts.Time.Before(before)
}
