// Package serviceaccount is the serviceaccounts/token subresource
// (TokenRequest, authentication.k8s.io/v1): upstream's TokenREST
// (pkg/registry/core/serviceaccount/storage/token.go, 1.34) over the
// shim's Stores, signing with shim/serviceaccount.
package serviceaccount

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	satoken "github.com/skiffnode/skiff/shim/serviceaccount"
)

// Expiration bounds of a TokenRequest, as upstream's (1.34).
const (
	// DefaultExpirationSeconds is SetDefaults_TokenRequestSpec's.
	DefaultExpirationSeconds = 3600
	// minExpirationSeconds is validation's MinTokenAgeSec (10 minutes).
	minExpirationSeconds = 600
	maxExpirationSeconds = 1 << 32
)

var gvk = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// TokenREST creates tokens for the service account named by the URL.
type TokenREST struct {
	ServiceAccounts, Pods, Secrets, Nodes rest.Getter
	Key                                   *satoken.Key
	Issuer                                string
	// Audiences are the API's audiences, the default of spec.audiences.
	Audiences []string
	// Now and NewJTI are the clock and the token ID source.
	Now    func() time.Time
	NewJTI func() string
}

var (
	_ rest.NamedCreater                   = (*TokenREST)(nil)
	_ rest.GroupVersionKindProvider       = (*TokenREST)(nil)
	_ rest.SubresourceObjectMetaPreserver = (*TokenREST)(nil)
)

// New implements rest.Storage.
func (r *TokenREST) New() runtime.Object { return &authenticationv1.TokenRequest{} }

// Destroy implements rest.Storage; there is nothing to release.
func (r *TokenREST) Destroy() {}

// GroupVersionKind implements rest.GroupVersionKindProvider: the body is an
// authentication.k8s.io/v1 TokenRequest, not a ServiceAccount.
func (r *TokenREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind { return gvk }

// PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate keeps the
// request's UID: it names the service account expected.
func (r *TokenREST) PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate() bool { return true }

// Create implements rest.NamedCreater: it checks the request as upstream
// does (names, the service account's UID, expirationSeconds, the bound
// object's kind, service account and UID) and returns it with the signed
// token and its expiration in status.
func (r *TokenREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", obj))
	}
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("namespace is required")
	}
	if req.Name != "" && req.Name != name {
		return nil, invalid(name, field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified"))
	}
	if req.Namespace != "" && req.Namespace != namespace {
		return nil, invalid(name, field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified"))
	}
	saObj, err := r.ServiceAccounts.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sa := saObj.(*corev1.ServiceAccount)
	if req.UID != "" && req.UID != sa.UID {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}
	sentAudiences := req.Spec.Audiences
	fill(req, sa, r.Audiences)
	now := r.Now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}
	if errs := validate(req); len(errs) != 0 {
		return nil, apierrors.NewInvalid(gvk.GroupKind(), "", errs)
	}
	if createValidation != nil {
		// Admission sees the audiences as sent: upstream's NodeRestriction,
		// a mutating plugin there, checks them before the API's audiences
		// fill an empty list (a node asks for none for a projected token
		// without an audience).
		sent := req.DeepCopy()
		sent.Spec.Audiences = sentAudiences
		if err := createValidation(ctx, sent); err != nil {
			return nil, err
		}
	}
	binding, err := r.bound(ctx, name, namespace, req.Spec.BoundObjectRef)
	if err != nil {
		return nil, err
	}
	exp := time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	claims, err := satoken.NewClaims(sa, binding, now, exp, req.Spec.Audiences, r.NewJTI())
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	tok, err := r.Key.Sign(r.Issuer, claims)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err))
	}
	out := req.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{Token: tok, ExpirationTimestamp: metav1.NewTime(now.Add(exp))}
	return out, nil
}

// fill defaults the request from the service account: audiences, name,
// namespace, UID, expirationSeconds (the scheme's defaulting sets it on
// decoded requests; this covers in-process callers).
func fill(req *authenticationv1.TokenRequest, sa *corev1.ServiceAccount, audiences []string) {
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = append([]string(nil), audiences...)
	}
	if req.Name == "" {
		req.Name = sa.Name
	}
	if req.Namespace == "" {
		req.Namespace = sa.Namespace
	}
	if req.UID == "" {
		req.UID = sa.UID
	}
	if req.Spec.ExpirationSeconds == nil {
		s := int64(DefaultExpirationSeconds)
		req.Spec.ExpirationSeconds = &s
	}
}

// validate is upstream's ValidateTokenRequest.
func validate(req *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "expirationSeconds")
	switch s := *req.Spec.ExpirationSeconds; {
	case s < minExpirationSeconds:
		errs = append(errs, field.Invalid(p, s, "may not specify a duration less than 10 minutes"))
	case s > maxExpirationSeconds:
		errs = append(errs, field.Invalid(p, s, "may not specify a duration larger than 2^32 seconds"))
	}
	return errs
}

// bound returns the object ref names, which must exist in namespace, run
// as the service account name (a pod), and have ref's UID if it gives one.
func (r *TokenREST) bound(ctx context.Context, name, namespace string, ref *authenticationv1.BoundObjectReference) (satoken.Binding, error) {
	var b satoken.Binding
	if ref == nil {
		return b, nil
	}
	var uid types.UID
	refGVK := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	switch {
	case refGVK.Group == "" && refGVK.Kind == "Pod":
		obj, err := r.Pods.Get(withGet(ctx, "pods", ref.Name, namespace), ref.Name, &metav1.GetOptions{})
		if err != nil {
			return b, err
		}
		b.Pod = obj.(*corev1.Pod)
		if name != podServiceAccount(b.Pod) {
			return b, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", name))
		}
		uid = b.Pod.UID
		if b.Node, err = r.podNode(ctx, b.Pod.Spec.NodeName); err != nil {
			return b, err
		}
	case refGVK.Group == "" && refGVK.Kind == "Secret":
		obj, err := r.Secrets.Get(withGet(ctx, "secrets", ref.Name, namespace), ref.Name, &metav1.GetOptions{})
		if err != nil {
			return b, err
		}
		b.Secret = obj.(*corev1.Secret)
		uid = b.Secret.UID
	default:
		// Upstream also binds to a Node (ServiceAccountTokenNodeBinding);
		// the shim does not: see shim/NOTES.md.
		return b, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", refGVK.String()))
	}
	if ref.UID != "" && uid != ref.UID {
		return b, apierrors.NewConflict(schema.GroupResource{Group: refGVK.Group, Resource: refGVK.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return b, nil
}

// podNode is the node a bound pod runs on, for the token's node claim: nil
// when unscheduled, only its name when the Node is missing (as upstream).
func (r *TokenREST) podNode(ctx context.Context, nodeName string) (*corev1.Node, error) {
	if nodeName == "" {
		return nil, nil
	}
	obj, err := r.Nodes.Get(withGet(ctx, "nodes", nodeName, ""), nodeName, &metav1.GetOptions{ResourceVersion: "0"})
	switch {
	case apierrors.IsNotFound(err):
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, nil
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	}
	return obj.(*corev1.Node), nil
}

// withGet is ctx for a get of resource/name in namespace (upstream's
// newContext): the Stores read the namespace and request info from it.
func withGet(ctx context.Context, resource, name, namespace string) context.Context {
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "get", Namespace: namespace,
		Resource: resource, Name: name, Parts: []string{resource, name}, APIVersion: "v1",
	})
}

// podServiceAccount is the pod's service account. An empty
// serviceAccountName is "default", as for the shim's Node authorizer:
// upstream's ServiceAccount admission plugin sets it at create, the shim
// has no such plugin, and skiff's agent requests "default"'s tokens for
// such pods.
func podServiceAccount(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName == "" {
		return "default"
	}
	return pod.Spec.ServiceAccountName
}

func invalid(name string, err *field.Error) error {
	return apierrors.NewInvalid(gvk.GroupKind(), name, field.ErrorList{err})
}
