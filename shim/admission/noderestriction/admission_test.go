package noderestriction

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"
)

// fakeLookup serves nodes and pods from maps ("ns/name" for pods).
type fakeLookup struct {
	nodes map[string]*corev1.Node
	pods  map[string]*corev1.Pod
}

func (f fakeLookup) Node(_ context.Context, name string) (*corev1.Node, error) {
	if n, ok := f.nodes[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
}

func (f fakeLookup) Pod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	if p, ok := f.pods[namespace+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

var (
	nodeUser  = &user.DefaultInfo{Name: "system:node:n1", Groups: []string{user.NodesGroup}}
	adminUser = &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}
)

func mirror(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "static-n1",
			Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "hash"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "n1-uid",
				Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"}},
			Volumes: []corev1.Volume{
				{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}},
				{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{DownwardAPI: &corev1.DownwardAPIProjection{}}}}}},
			}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func boundPod(name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault"}}}}}}}},
	}
}

func node(name string, mutate func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	if mutate != nil {
		mutate(n)
	}
	return n
}

func token(pod string, uid types.UID, audiences ...string) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences,
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod, UID: uid}}}
}

// call is one admission request; the user is node n1 unless set.
type call struct {
	user                           user.Info
	op                             admission.Operation
	group, resource, sub, ns, name string
	obj, old                       runtime.Object
}

func (c call) attrs() admission.Attributes {
	u := c.user
	if u == nil {
		u = nodeUser
	}
	gvr := schema.GroupVersionResource{Group: c.group, Version: "v1", Resource: c.resource}
	return admission.NewAttributesRecord(c.obj, c.old, schema.GroupVersionKind{}, c.ns, c.name, gvr, c.sub, c.op, nil, false, u)
}

// TestNodeRestriction (issue 17 security, NodeRestriction): upstream's
// rules for a node's writes, table-driven. want: "" allowed, "403" or
// "404", or a fragment of the 403's message.
func TestNodeRestriction(t *testing.T) {
	mine, theirs := boundPod("mine", "n1", map[string]string{"app": "a"}), boundPod("theirs", "n2", nil)
	relabelled := mine.DeepCopy()
	relabelled.Labels["app"] = "b"
	pods := func(op admission.Operation, obj *corev1.Pod) call {
		return call{op: op, resource: "pods", ns: "ns", name: obj.Name, obj: obj}
	}
	tests := []struct {
		name string
		call call
		want string
	}{
		{"admin creates any pod", call{user: adminUser, op: admission.Create, resource: "pods", ns: "ns", name: "x", obj: boundPod("x", "n2", nil)}, ""},
		{"node user without a name", call{user: &user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}, op: admission.Create, resource: "pods", obj: mirror(nil)}, "could not determine node"},
		{"own mirror pod", pods(admission.Create, mirror(nil)), ""},
		{"ordinary pod", pods(admission.Create, mirror(func(p *corev1.Pod) { p.Annotations = nil })), `node "n1" can only create mirror pods`},
		{"mirror pod of another node", pods(admission.Create, mirror(func(p *corev1.Pod) { p.Spec.NodeName = "n2" })), "spec.nodeName set to itself"},
		{"mirror pod without owner", pods(admission.Create, mirror(func(p *corev1.Pod) { p.OwnerReferences = nil })), "owner reference set to itself"},
		{"mirror pod owned by another node", pods(admission.Create, mirror(func(p *corev1.Pod) { p.OwnerReferences[0].Name = "n2" })), "owner reference set to itself"},
		{"mirror pod, owner not controller", pods(admission.Create, mirror(func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil })), "controller owner reference"},
		{"mirror pod, blockOwnerDeletion", pods(admission.Create, mirror(func(p *corev1.Pod) { p.OwnerReferences[0].BlockOwnerDeletion = ptr.To(true) })), "blockOwnerDeletion"},
		{"mirror pod, node UID mismatch", pods(admission.Create, mirror(func(p *corev1.Pod) { p.OwnerReferences[0].UID = "old" })), "UID mismatch"},
		{"mirror pod of a node not registered", call{user: &user.DefaultInfo{Name: "system:node:n3", Groups: []string{user.NodesGroup}}, op: admission.Create, resource: "pods", ns: "ns",
			obj: mirror(func(p *corev1.Pod) { p.Spec.NodeName, p.OwnerReferences[0].Name = "n3", "n3" })}, "404"},
		{"mirror pod with a service account", pods(admission.Create, mirror(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "sa" })), "reference serviceaccounts"},
		// CVE-2025-4563 (kubernetes#132151): a mirror pod claiming dynamic resources.
		{"mirror pod with resourceClaims", pods(admission.Create, mirror(func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("someone-elses")}}
		})), "reference resourceclaims"},
		{"mirror pod with a secret env", pods(admission.Create, mirror(func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}
		})), "reference secrets"},
		{"mirror pod with a configmap volume", pods(admission.Create, mirror(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}})
		})), "reference configmaps"},
		{"mirror pod with a claim", pods(admission.Create, mirror(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}})
		})), "reference persistentvolumeclaims"},
		{"mirror pod with a projected token", pods(admission.Create, mirror(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, boundPod("x", "n1", nil).Spec.Volumes...)
		})), "serviceaccounts (via projected volumes)"},
		{"mirror pod with an unknown volume", pods(admission.Create, mirror(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "empty"})
		})), "unknown volume type"},
		{"delete own pod", call{op: admission.Delete, resource: "pods", ns: "ns", name: "mine", old: mine}, ""},
		{"delete another node's pod", call{op: admission.Delete, resource: "pods", ns: "ns", name: "theirs", old: theirs}, "can only delete pods with spec.nodeName set to itself"},
		{"update a pod", call{op: admission.Update, resource: "pods", ns: "ns", name: "mine", obj: mine, old: mine}, "can only create and delete mirror pods"},
		{"own pod status", call{op: admission.Update, resource: "pods", sub: "status", ns: "ns", name: "mine", obj: mine, old: mine}, ""},
		{"another node's pod status", call{op: admission.Update, resource: "pods", sub: "status", ns: "ns", name: "theirs", obj: theirs, old: theirs}, "can only update pod status for pods with spec.nodeName set to itself"},
		{"labels through status", call{op: admission.Update, resource: "pods", sub: "status", ns: "ns", name: "mine", obj: relabelled, old: mine}, "cannot update labels"},
		{"evict own pod", call{op: admission.Create, resource: "pods", sub: "eviction", ns: "ns", name: "mine", obj: &policyv1.Eviction{}}, ""},
		{"evict another node's pod", call{op: admission.Create, resource: "pods", sub: "eviction", ns: "ns", obj: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}}, "can only evict pods"},
		{"evict a missing pod", call{op: admission.Create, resource: "pods", sub: "eviction", ns: "ns", name: "gone", obj: &policyv1.Eviction{}}, "404"},
		{"exec", call{op: admission.Create, resource: "pods", sub: "exec", ns: "ns", name: "mine"}, "unexpected pod subresource"},
		{"resize own pod", call{op: admission.Update, resource: "pods", sub: "resize", ns: "ns", name: "mine", obj: mine, old: mine}, "unexpected pod subresource \"resize\""},
		// Nodes.
		{"register itself", call{op: admission.Create, resource: "nodes", name: "n1", obj: node("n1", nil)}, ""},
		{"register another node", call{op: admission.Create, resource: "nodes", name: "n2", obj: node("n2", nil)}, `node "n1" is not allowed to modify node "n2"`},
		{"register with a node-restriction label", call{op: admission.Create, resource: "nodes", name: "n1", obj: node("n1", func(n *corev1.Node) {
			n.Labels["node-restriction.kubernetes.io/pool"] = "gold"
		})}, "not allowed to set the following labels: node-restriction.kubernetes.io/pool"},
		{"register with an unknown kubernetes.io label", call{op: admission.Create, resource: "nodes", name: "n1", obj: node("n1", func(n *corev1.Node) {
			n.Labels["foo.k8s.io/x"] = "y"
		})}, "foo.k8s.io/x"},
		{"register with kubelet and own labels", call{op: admission.Create, resource: "nodes", name: "n1", obj: node("n1", func(n *corev1.Node) {
			n.Labels["node.kubernetes.io/instance-type"], n.Labels["kubernetes.io/os"], n.Labels["example.com/tier"] = "m", "linux", "a"
		})}, ""},
		{"register with a configSource", call{op: admission.Create, resource: "nodes", name: "n1", obj: node("n1", func(n *corev1.Node) {
			n.Spec.ConfigSource = &corev1.NodeConfigSource{} //nolint:staticcheck // still refused upstream
		})}, "configSource"},
		{"update own node", call{op: admission.Update, resource: "nodes", name: "n1", obj: node("n1", func(n *corev1.Node) { n.Labels["example.com/x"] = "1" }), old: node("n1", nil)}, ""},
		{"update own status", call{op: admission.Update, resource: "nodes", sub: "status", name: "n1", obj: node("n1", nil), old: node("n1", nil)}, ""},
		{"update another node's status", call{op: admission.Update, resource: "nodes", sub: "status", name: "n2", obj: node("n2", nil), old: node("n2", nil)}, "not allowed to modify node"},
		{"remove own taints", call{op: admission.Update, resource: "nodes", name: "n1", obj: node("n1", nil), old: node("n1", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		})}, "not allowed to modify taints"},
		{"change owner references", call{op: admission.Update, resource: "nodes", name: "n1", obj: node("n1", func(n *corev1.Node) {
			n.OwnerReferences = []metav1.OwnerReference{{Name: "x"}}
		}), old: node("n1", nil)}, "not allowed to modify ownerReferences"},
		{"remove a node-restriction label", call{op: admission.Update, resource: "nodes", name: "n1", obj: node("n1", nil), old: node("n1", func(n *corev1.Node) {
			n.Labels["node-restriction.kubernetes.io/pool"] = "gold"
		})}, "not allowed to modify labels: node-restriction.kubernetes.io/pool"},
		// Leases.
		{"create own lease", call{op: admission.Create, group: "coordination.k8s.io", resource: "leases", ns: "kube-node-lease", name: "n1",
			obj: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}, ""},
		{"create another node's lease", call{op: admission.Create, group: "coordination.k8s.io", resource: "leases", ns: "kube-node-lease", name: "n2",
			obj: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}}, "can only access node lease with the same name"},
		{"lease elsewhere", call{op: admission.Create, group: "coordination.k8s.io", resource: "leases", ns: "default", name: "n1",
			obj: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}, `can only access leases in the "kube-node-lease" system namespace`},
		{"update another node's lease", call{op: admission.Update, group: "coordination.k8s.io", resource: "leases", ns: "kube-node-lease", name: "n2",
			obj: &coordinationv1.Lease{}, old: &coordinationv1.Lease{}}, "403"},
		// Service account tokens.
		{"token bound to own pod", call{op: admission.Create, resource: "serviceaccounts", sub: "token", ns: "ns", name: "default", obj: token("mine", "mine-uid", "vault")}, ""},
		{"token not bound", call{op: admission.Create, resource: "serviceaccounts", sub: "token", ns: "ns", name: "default", obj: &authenticationv1.TokenRequest{}}, "not bound to a pod"},
		{"token without uid", call{op: admission.Create, resource: "serviceaccounts", sub: "token", ns: "ns", name: "default", obj: token("mine", "", "vault")}, "without a uid"},
		{"token for a recreated pod", call{op: admission.Create, resource: "serviceaccounts", sub: "token", ns: "ns", name: "default", obj: token("mine", "old", "vault")}, "does not match the UID"},
		{"token for another node's pod", call{op: admission.Create, resource: "serviceaccounts", sub: "token", ns: "ns", name: "default", obj: token("theirs", "theirs-uid", "vault")}, "scheduled on a different node"},
		{"token for an audience the pod does not project", call{op: admission.Create, resource: "serviceaccounts", sub: "token", ns: "ns", name: "default", obj: token("mine", "mine-uid", "bank")}, `audience "bank" not found`},
		{"token for two audiences", call{op: admission.Create, resource: "serviceaccounts", sub: "token", ns: "ns", name: "default", obj: token("mine", "mine-uid", "vault", "bank")}, "0 or 1 audiences"},
		// Left to the authorizer.
		{"configmap", call{op: admission.Create, resource: "configmaps", ns: "ns", name: "c", obj: &corev1.ConfigMap{}}, ""},
	}
	lookup := fakeLookup{
		nodes: map[string]*corev1.Node{"n1": node("n1", func(n *corev1.Node) { n.UID = "n1-uid" })},
		pods:  map[string]*corev1.Pod{"ns/mine": mine, "ns/theirs": theirs},
	}
	p := New(lookup)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.call.attrs()
			if !p.Handles(a.GetOperation()) {
				t.Fatalf("does not handle %s", a.GetOperation())
			}
			err := p.Validate(context.Background(), a, nil)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == "":
			case tt.want == "404":
				if !apierrors.IsNotFound(err) {
					t.Fatalf("got %v, want 404", err)
				}
			case !apierrors.IsForbidden(err):
				t.Fatalf("got %v, want 403", err)
			case tt.want != "403" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("got %q, want it to contain %q", err, tt.want)
			}
		})
	}
}
