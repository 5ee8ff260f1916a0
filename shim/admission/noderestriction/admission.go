// Package noderestriction is the shim's NodeRestriction admission plugin:
// it limits the writes the Node authorizer (shim/authz/node) lets a node
// identity make to the node's own objects. It re-implements Kubernetes
// 1.34's plugin/pkg/admission/noderestriction/admission.go for the objects
// the shim serves (pods and their status, nodes, leases) and, so that the
// rules exist when they are served, evictions, service account tokens and
// CSINodes. Messages are upstream's.
//
// It is a validating plugin (upstream's is mutating though it mutates
// nothing): it then sees the final object after every mutating plugin,
// and on delete the object being deleted (the registry passes it as the
// old object), so it needs no pod cache.
package noderestriction

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes"

	nodeauthz "github.com/skiffnode/skiff/shim/authz/node"
)

// PluginName is upstream's name of the plugin.
const PluginName = "NodeRestriction"

// Lookup reads the current objects a request is checked against. It must
// be safe for concurrent use; calls block.
type Lookup interface {
	// Node returns the Node name (a NotFound error if there is none).
	Node(ctx context.Context, name string) (*corev1.Node, error)
	// Pod returns the pod namespace/name (a NotFound error if none).
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// ClientLookup reads through c (the shim passes its loopback client).
func ClientLookup(c kubernetes.Interface) Lookup { return clientLookup{c} }

type clientLookup struct{ c kubernetes.Interface }

func (l clientLookup) Node(ctx context.Context, name string) (*corev1.Node, error) {
	return l.c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (l clientLookup) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return l.c.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Plugin is the NodeRestriction admission plugin. Safe for concurrent use.
type Plugin struct {
	*admission.Handler
	lookup Lookup
}

var (
	_ admission.ValidationInterface     = &Plugin{}
	_ admission.InitializationValidator = &Plugin{}
)

// New returns the plugin; it handles creates, updates and deletes.
func New(lookup Lookup) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete), lookup: lookup}
}

// ValidateInitialization implements admission.InitializationValidator.
func (p *Plugin) ValidateInitialization() error {
	if p.lookup == nil {
		return fmt.Errorf("%s requires a lookup of nodes and pods", PluginName)
	}
	return nil
}

// Validate implements admission.ValidationInterface: requests of
// non-node users pass; a node's are checked by resource. Blocks on Lookup
// for mirror pod creates, evictions and token requests.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	node, isNode := nodeauthz.Identity(a.GetUserInfo())
	if !isNode {
		return nil
	}
	if node == "" {
		return forbidden(a, "could not determine node from user %q", a.GetUserInfo().GetName())
	}
	switch gr := a.GetResource().GroupResource(); gr {
	case schema.GroupResource{Resource: "pods"}:
		switch a.GetSubresource() {
		case "":
			return p.pod(ctx, node, a)
		case "status":
			return podStatus(node, a)
		case "eviction":
			return p.eviction(ctx, node, a)
		}
		return forbidden(a, "unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.GetSubresource())
	case schema.GroupResource{Resource: "nodes"}:
		return nodeObject(node, a)
	case schema.GroupResource{Resource: "persistentvolumeclaims"}:
		// Upstream lets a node update a PVC's status.capacity and
		// conditions only; the shim serves no PVCs.
		return forbidden(a, "may only update PVC status")
	case schema.GroupResource{Resource: "serviceaccounts"}:
		return p.token(ctx, node, a)
	case schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}:
		return lease(node, a)
	case schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}:
		return ownName(a, node, "can only access CSINode with the same name as the requesting node")
	}
	return nil
}

// forbidden is a 403 for a, with upstream's "... is forbidden: <msg>".
func forbidden(a admission.Attributes, format string, args ...any) error {
	return admission.NewForbidden(a, fmt.Errorf(format, args...))
}

// lookupErr passes a NotFound on unwrapped (as upstream: the request then
// fails with 404; the handlers read API errors by type, not errors.As)
// and makes any other error a 403.
func lookupErr(a admission.Attributes, err error) error {
	if apierrors.IsNotFound(err) {
		return err
	}
	return admission.NewForbidden(a, err)
}

// lease: only the Lease named as the node, in kube-node-lease.
func lease(node string, a admission.Attributes) error {
	if a.GetNamespace() != corev1.NamespaceNodeLease {
		return forbidden(a, "can only access leases in the %q system namespace", corev1.NamespaceNodeLease)
	}
	return ownName(a, node, "can only access node lease with the same name as the requesting node")
}

// ownName refuses with msg unless the object (on create) or the request
// (otherwise) is named as the node.
func ownName(a admission.Attributes, node, msg string) error {
	name := a.GetName()
	if a.GetOperation() == admission.Create {
		obj, err := meta.Accessor(a.GetObject())
		if err != nil {
			return forbidden(a, "unable to access the object name")
		}
		name = obj.GetName()
	}
	if name != node {
		return forbidden(a, "%s", msg)
	}
	return nil
}
