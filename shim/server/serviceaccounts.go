package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/skiffnode/skiff/shim/registry/selfsubjectreview"
	regsa "github.com/skiffnode/skiff/shim/registry/serviceaccount"
	satoken "github.com/skiffnode/skiff/shim/serviceaccount"
)

// serviceAccountTokens are what service-account tokens need: the signing
// key, the issuer (also the API's one audience, as kube-apiserver's
// --api-audiences defaults to --service-account-issuer) and the Stores
// the tokens' objects are read from.
type serviceAccountTokens struct {
	key    *satoken.Key
	issuer string
}

func (t serviceAccountTokens) audiences() []string { return []string{t.issuer} }

// addServiceAccountAPIs adds serviceaccounts/token to the core group and
// authentication.k8s.io/v1 selfsubjectreviews.
func (t serviceAccountTokens) addServiceAccountAPIs(st *apiStorage) {
	core := st.byGroup[""]
	core["serviceaccounts/token"] = &regsa.TokenREST{
		ServiceAccounts: core["serviceaccounts"].(rest.Getter),
		Pods:            core["pods"].(rest.Getter),
		Secrets:         core["secrets"].(rest.Getter),
		Nodes:           core["nodes"].(rest.Getter),
		Key:             t.key, Issuer: t.issuer, Audiences: t.audiences(),
		Now: time.Now, NewJTI: uuid.NewString,
	}
	st.byGroup[authenticationv1.GroupName] = map[string]rest.Storage{"selfsubjectreviews": &selfsubjectreview.REST{}}
}

// authenticator authenticates the tokens it signs, reading the objects
// they name from st's Stores.
func (t serviceAccountTokens) authenticator(st *apiStorage) *satoken.Authenticator {
	core := st.byGroup[""]
	return &satoken.Authenticator{
		Key: t.key, Issuer: t.issuer, Audiences: t.audiences(),
		Objects: storeObjects{
			serviceAccounts: core["serviceaccounts"].(rest.Getter),
			pods:            core["pods"].(rest.Getter),
			secrets:         core["secrets"].(rest.Getter),
		},
	}
}

// storeObjects reads the objects of satoken.Objects from the Stores, with
// no authorization: the requester is not yet authenticated. A read is a
// consistent get (etcd, or the watch cache once fresh); upstream's token
// cache in front of it is not re-implemented.
type storeObjects struct {
	serviceAccounts, pods, secrets rest.Getter
}

func (s storeObjects) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return get[*corev1.ServiceAccount](ctx, s.serviceAccounts, namespace, name)
}

func (s storeObjects) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return get[*corev1.Pod](ctx, s.pods, namespace, name)
}

func (s storeObjects) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return get[*corev1.Secret](ctx, s.secrets, namespace, name)
}

func get[T runtime.Object](ctx context.Context, g rest.Getter, namespace, name string) (T, error) {
	var zero T
	obj, err := g.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if err != nil {
		return zero, err
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("%s/%s is a %T", namespace, name, obj)
	}
	return t, nil
}

// installIssuerDiscovery serves the issuer's OpenID configuration and key
// set at upstream's paths when the issuer is an https URL (kube-apiserver
// then serves them too; otherwise it logs and does not).
func (t serviceAccountTokens) installIssuerDiscovery(g *genericapiserver.GenericAPIServer, externalAddress string) {
	md, err := satoken.NewOpenIDMetadata(t.issuer, externalAddress, t.key)
	if err != nil {
		klog.InfoS("Not serving the service-account issuer discovery", "err", err)
		return
	}
	config, keyset := md.Handlers()
	g.Handler.NonGoRestfulMux.Handle(satoken.OpenIDConfigPath, config)
	g.Handler.NonGoRestfulMux.Handle(satoken.JWKSPath, keyset)
}

// issuerDiscovery lets service accounts read the issuer discovery
// documents: upstream's system:service-account-issuer-discovery role,
// bound to system:serviceaccounts.
func issuerDiscovery() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if !a.IsResourceRequest() && a.GetVerb() == "get" &&
			(a.GetPath() == satoken.OpenIDConfigPath || a.GetPath() == satoken.JWKSPath) &&
			a.GetUser() != nil && slices.Contains(a.GetUser().GetGroups(), apiserverserviceaccount.AllServiceAccountsGroup) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}
