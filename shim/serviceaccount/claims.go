// Package serviceaccount issues and authenticates the shim's
// service-account tokens: JWTs signed with the key of shim/pki (pki/sa.key),
// with the claims kube-apiserver 1.34 puts in them
// (k8s.io/kubernetes/pkg/serviceaccount, re-implemented here over
// github.com/golang-jwt/jwt/v5, which the shim already links through etcd,
// instead of upstream's go-jose). Tokens are those of TokenRequest
// (serviceaccounts/token); the legacy secret-based tokens are not issued.
package serviceaccount

import (
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"
	corev1 "k8s.io/api/core/v1"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// DefaultIssuer is kube-apiserver's usual --service-account-issuer (the
// one kubeadm and kind set).
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// Claims are a token's payload: the registered claims and upstream's
// private "kubernetes.io" claim.
type Claims struct {
	jwt.RegisteredClaims
	Kubernetes Private `json:"kubernetes.io,omitempty"`
}

// Private is upstream's "kubernetes.io" claim (pkg/serviceaccount/claims.go).
type Private struct {
	Namespace string `json:"namespace,omitempty"`
	Svcacct   Ref    `json:"serviceaccount,omitempty"`
	Pod       *Ref   `json:"pod,omitempty"`
	Secret    *Ref   `json:"secret,omitempty"`
	Node      *Ref   `json:"node,omitempty"`
}

// Ref names a bound object.
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Binding is what a token is bound to besides its service account: a pod
// (with its node, which may lack a UID) or a secret, or nothing.
type Binding struct {
	Pod    *corev1.Pod
	Node   *corev1.Node
	Secret *corev1.Secret
}

// NewClaims returns the claims of a token for sa, valid from now for
// expiration, for audiences, with ID jti, bound as b says. As upstream's
// Claims (features ServiceAccountTokenJTI and ServiceAccountTokenPodNodeInfo
// on, as in 1.34): a pod-bound token also names the pod's node; binding
// to a node alone is not offered (ServiceAccountTokenNodeBinding's
// validation would need node-bound tokens the shim has no use for).
func NewClaims(sa *corev1.ServiceAccount, b Binding, now time.Time, expiration time.Duration, audiences []string, jti string) (*Claims, error) {
	if b.Secret != nil && b.Pod != nil {
		return nil, errors.New("internal error, token can only be bound to one object type")
	}
	c := &Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   apiserverserviceaccount.MakeUsername(sa.Namespace, sa.Name),
			Audience:  jwt.ClaimStrings(audiences),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(expiration)),
			ID:        jti,
		},
		Kubernetes: Private{Namespace: sa.Namespace, Svcacct: Ref{Name: sa.Name, UID: string(sa.UID)}},
	}
	switch {
	case b.Pod != nil:
		c.Kubernetes.Pod = &Ref{Name: b.Pod.Name, UID: string(b.Pod.UID)}
		if b.Node != nil {
			c.Kubernetes.Node = &Ref{Name: b.Node.Name, UID: string(b.Node.UID)}
		}
	case b.Secret != nil:
		c.Kubernetes.Secret = &Ref{Name: b.Secret.Name, UID: string(b.Secret.UID)}
	}
	return c, nil
}
