package server

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/shim/admission/nodedeclaredfeatures"
	"github.com/skiffnode/skiff/shim/admission/noderestriction"
	"github.com/skiffnode/skiff/shim/admission/podresize"
	"github.com/skiffnode/skiff/shim/admission/serviceaccount"
	"github.com/skiffnode/skiff/shim/admission/singlenode"
)

// admissionChain builds the shim's admission plugins, in the order they
// run, each given its dependencies explicitly (no plugin registry, no
// initializers). client and factory talk to the shim itself through its
// loopback connection; the factory is started once the server serves
// (genericapiserver's start-informers hook), so a plugin must wait for
// its informers' sync before it trusts them (ValidateInitialization
// checks the wiring, not the sync). New pods get their service account
// and its token volume (serviceaccount). With a node (Options.NodeName), new
// pods without one are placed on it (singlenode). Pod updates and resizes
// are checked against their node (its declared features, its allocatable
// resources) as in a cluster at version v.
func admissionChain(client kubernetes.Interface, factory informers.SharedInformerFactory, node string,
	v *version.Version) (admission.Interface, error) {
	lifecycle, err := namespaceLifecycle(client, factory)
	if err != nil {
		return nil, err
	}
	// Upstream's order: NamespaceLifecycle first, ServiceAccount, then
	// NodeRestriction later.
	plugins := []admission.Interface{lifecycle, serviceAccounts(client, factory)}
	if node != "" {
		plugins = append(plugins, singlenode.New(node))
	}
	lookup := noderestriction.ClientLookup(client)
	// Upstream's order: NodeRestriction, then (last before the webhooks)
	// NodeDeclaredFeatureValidator and PodResizeValidator.
	plugins = append(plugins, noderestriction.New(lookup), nodedeclaredfeatures.New(lookup, v), podresize.New(lookup))
	for _, p := range plugins {
		if iv, ok := p.(admission.InitializationValidator); ok {
			if err := iv.ValidateInitialization(); err != nil {
				return nil, fmt.Errorf("admission: %w", err)
			}
		}
	}
	return admission.NewChainHandler(plugins...), nil
}

// serviceAccounts is the ServiceAccount plugin on the factory's service
// accounts (registered now, started with the factory) and the API.
func serviceAccounts(client kubernetes.Interface, factory informers.SharedInformerFactory) *serviceaccount.Plugin {
	cached := factory.Core().V1().ServiceAccounts().Lister()
	return serviceaccount.New(
		func(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
			return cached.ServiceAccounts(ns).Get(name)
		},
		func(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
			return client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		})
}

// namespaceLifecycle is k8s.io/apiserver's NamespaceLifecycle with
// kube-apiserver's immortal namespaces (lifecycle.Register in v1.37:
// default, kube-system, kube-public; kube-node-lease may be deleted): no
// objects are created in a missing (404) or terminating (403) namespace, and
// the immortal ones may not be deleted (403).
func namespaceLifecycle(client kubernetes.Interface, factory informers.SharedInformerFactory) (*lifecycle.Lifecycle, error) {
	l, err := lifecycle.NewLifecycle(sets.New(metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic))
	if err != nil {
		return nil, fmt.Errorf("admission %s: %w", lifecycle.PluginName, err)
	}
	l.SetExternalKubeInformerFactory(factory)
	l.SetExternalKubeClientSet(client)
	return l, nil
}
