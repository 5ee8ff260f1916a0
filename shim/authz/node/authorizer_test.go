package node

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// fakePods serves pods from a slice, or err.
type fakePods struct {
	pods  []*corev1.Pod
	err   error
	calls int
}

func (f *fakePods) PodsOnNode(_ context.Context, namespace, node string) ([]*corev1.Pod, error) {
	f.calls++
	var out []*corev1.Pod
	for _, p := range f.pods {
		if p.Namespace == namespace && p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, f.err
}

// fakeVolumes serves PersistentVolumes from a map (a missing one is nil),
// or err.
type fakeVolumes struct {
	volumes map[string]*corev1.PersistentVolume
	err     error
}

func (f *fakeVolumes) PersistentVolume(_ context.Context, name string) (*corev1.PersistentVolume, error) {
	return f.volumes[name], f.err
}

// boundTo is a PersistentVolume whose claimRef is namespace/claim ("":
// no claimRef).
func boundTo(namespace, claim string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{}
	if claim != "" {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: claim, UID: "u"}
	}
	return pv
}

// testVolumes are bound to claims of testPods: of web (claim, its
// ephemeral web-scratch), of team/db, of the other node's pod, of the
// mirror pod, of no pod; and one is not bound.
func testVolumes() *fakeVolumes {
	return &fakeVolumes{volumes: map[string]*corev1.PersistentVolume{
		"pv-claim":     boundTo("ns", "claim"),
		"pv-ephemeral": boundTo("ns", "web-scratch"),
		"pv-team":      boundTo("team", "db"),
		"pv-n2":        boundTo("ns", "n2-claim"),
		"pv-mirror":    boundTo("ns", "mirror-claim"),
		"pv-unused":    boundTo("ns", "unused"),
		"pv-elsewhere": boundTo("other", "claim"),
		"pv-available": boundTo("", ""),
	}}
}

func claimVolume(claim string) corev1.Volume {
	return corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

func testPods() []*corev1.Pod {
	envSecret := corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}}}}
	cmFrom := corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-cm"}}}
	ephEnv := corev1.EnvVar{Name: "B", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "eph-cm"}}}}
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.PodSpec{
			NodeName:           "n1",
			ServiceAccountName: "web-sa",
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}},
			InitContainers:     []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{cmFrom}}},
			Containers:         []corev1.Container{{Name: "app", Env: []corev1.EnvVar{envSecret}}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Env: []corev1.EnvVar{ephEnv}}}},
			Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
				}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
				{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d",
					NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
			},
		},
	}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}, Spec: corev1.PodSpec{NodeName: "n2",
		Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "n2-secret"}}}, claimVolume("n2-claim")}}}
	mirror := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mirror", Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "h"}},
		Spec: corev1.PodSpec{NodeName: "n1",
			Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "mirror-secret"}}}, claimVolume("mirror-claim")}},
	}
	team := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db"}, Spec: corev1.PodSpec{NodeName: "n1",
		Volumes: []corev1.Volume{claimVolume("db")}}}
	return []*corev1.Pod{web, plain, other, mirror, team}
}

// req is a resource request of node n1 unless changed by the case.
type req struct {
	user                                      user.Info
	verb, group, resource, sub, namespace, nm string
	selector                                  string
	path                                      string
}

func (r req) attrs(t *testing.T) authorizer.Attributes {
	u := r.user
	if u == nil {
		u = &user.DefaultInfo{Name: "system:node:n1", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	}
	a := authorizer.AttributesRecord{User: u, Verb: r.verb, APIGroup: r.group, APIVersion: "v1", Resource: r.resource,
		Subresource: r.sub, Namespace: r.namespace, Name: r.nm, ResourceRequest: r.path == "", Path: r.path}
	if r.selector != "" {
		sel, err := fields.ParseSelector(r.selector)
		if err != nil {
			t.Fatal(err)
		}
		a.FieldSelectorRequirements = sel.Requirements()
	}
	return a
}

// TestNodeAuthorizer (issue 17 security, Node authorizer): upstream's
// decisions for a node's requests, table-driven.
func TestNodeAuthorizer(t *testing.T) {
	allow, no := authorizer.DecisionAllow, authorizer.DecisionNoOpinion
	tests := []struct {
		name string
		req  req
		want authorizer.Decision
	}{
		// Who is a node.
		{"admin: no opinion", req{user: &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}, verb: "get", resource: "nodes", nm: "n1"}, no},
		{"node name without group", req{user: &user.DefaultInfo{Name: "system:node:n1"}, verb: "get", resource: "nodes", nm: "n1"}, no},
		{"nodes group with another name", req{user: &user.DefaultInfo{Name: "bob", Groups: []string{user.NodesGroup}}, verb: "get", resource: "nodes", nm: "n1"}, no},
		{"node without a name", req{user: &user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}, verb: "get", resource: "nodes", nm: ""}, no},
		{"non-resource request", req{verb: "get", path: "/api"}, no},
		// Nodes.
		{"get own node", req{verb: "get", resource: "nodes", nm: "n1"}, allow},
		{"get other node", req{verb: "get", resource: "nodes", nm: "n2"}, no},
		{"list all nodes", req{verb: "list", resource: "nodes"}, no},
		{"watch own node by name", req{verb: "watch", resource: "nodes", nm: "n1"}, allow},
		{"create node", req{verb: "create", resource: "nodes"}, allow},
		{"patch node", req{verb: "patch", resource: "nodes", nm: "n1"}, allow},
		{"update node status", req{verb: "update", resource: "nodes", sub: "status", nm: "n1"}, allow},
		{"get node status", req{verb: "get", resource: "nodes", sub: "status", nm: "n1"}, no},
		{"delete node", req{verb: "delete", resource: "nodes", nm: "n1"}, no},
		// Pods.
		{"list pods with own selector", req{verb: "list", resource: "pods", selector: "spec.nodeName=n1"}, allow},
		{"watch pods with own selector and more", req{verb: "watch", resource: "pods", selector: "spec.nodeName=n1,status.phase=Running"}, allow},
		{"list pods of another node", req{verb: "list", resource: "pods", selector: "spec.nodeName=n2"}, no},
		{"list pods with != selector", req{verb: "list", resource: "pods", selector: "spec.nodeName!=n2"}, no},
		{"list all pods", req{verb: "list", resource: "pods"}, no},
		{"watch own pod by name", req{verb: "watch", resource: "pods", namespace: "ns", nm: "web"}, allow},
		{"get own pod", req{verb: "get", resource: "pods", namespace: "ns", nm: "plain"}, allow},
		{"get own mirror pod", req{verb: "get", resource: "pods", namespace: "ns", nm: "mirror"}, allow},
		{"get other node's pod", req{verb: "get", resource: "pods", namespace: "ns", nm: "other"}, no},
		{"create pod", req{verb: "create", resource: "pods", namespace: "ns"}, allow},
		{"delete pod", req{verb: "delete", resource: "pods", namespace: "ns", nm: "other"}, allow},
		{"update pod", req{verb: "update", resource: "pods", namespace: "ns", nm: "web"}, no},
		{"deletecollection pods", req{verb: "deletecollection", resource: "pods", namespace: "ns"}, no},
		{"patch pod status", req{verb: "patch", resource: "pods", sub: "status", namespace: "ns", nm: "web"}, allow},
		{"create eviction", req{verb: "create", resource: "pods", sub: "eviction", namespace: "ns", nm: "web"}, allow},
		{"exec", req{verb: "create", resource: "pods", sub: "exec", namespace: "ns", nm: "web"}, no},
		// Upstream's Node authorizer has no rule for pods/resize: a node
		// never resizes, not even its own pods.
		{"patch own pod resize", req{verb: "patch", resource: "pods", sub: "resize", namespace: "ns", nm: "web"}, no},
		{"update own pod resize", req{verb: "update", resource: "pods", sub: "resize", namespace: "ns", nm: "web"}, no},
		// Secrets and configmaps of its pods.
		{"secret volume", req{verb: "get", resource: "secrets", namespace: "ns", nm: "vol-secret"}, allow},
		{"secret env", req{verb: "get", resource: "secrets", namespace: "ns", nm: "env-secret"}, allow},
		{"image pull secret", req{verb: "get", resource: "secrets", namespace: "ns", nm: "pull"}, allow},
		{"projected secret", req{verb: "watch", resource: "secrets", namespace: "ns", nm: "proj-secret"}, allow},
		{"csi secret", req{verb: "list", resource: "secrets", namespace: "ns", nm: "csi-secret"}, allow},
		{"unreferenced secret", req{verb: "get", resource: "secrets", namespace: "ns", nm: "nope"}, no},
		{"secret of another node's pod", req{verb: "get", resource: "secrets", namespace: "ns", nm: "n2-secret"}, no},
		{"secret of a mirror pod", req{verb: "get", resource: "secrets", namespace: "ns", nm: "mirror-secret"}, no},
		{"secret in another namespace", req{verb: "get", resource: "secrets", namespace: "other", nm: "vol-secret"}, no},
		{"list all secrets", req{verb: "list", resource: "secrets", namespace: "ns"}, no},
		{"list secrets cluster-wide", req{verb: "list", resource: "secrets"}, no},
		{"update referenced secret", req{verb: "update", resource: "secrets", namespace: "ns", nm: "vol-secret"}, no},
		{"configmap of init container envFrom", req{verb: "get", resource: "configmaps", namespace: "ns", nm: "init-cm"}, allow},
		{"configmap of ephemeral container env", req{verb: "get", resource: "configmaps", namespace: "ns", nm: "eph-cm"}, allow},
		{"projected configmap", req{verb: "get", resource: "configmaps", namespace: "ns", nm: "proj-cm"}, allow},
		{"create configmap", req{verb: "create", resource: "configmaps", namespace: "ns"}, no},
		// Claims, service accounts.
		{"pvc", req{verb: "get", resource: "persistentvolumeclaims", namespace: "ns", nm: "claim"}, allow},
		{"ephemeral pvc", req{verb: "get", resource: "persistentvolumeclaims", namespace: "ns", nm: "web-scratch"}, allow},
		{"pvc status", req{verb: "patch", resource: "persistentvolumeclaims", sub: "status", namespace: "ns", nm: "claim"}, allow},
		{"list pvcs", req{verb: "list", resource: "persistentvolumeclaims", namespace: "ns", nm: "claim"}, no},
		// PersistentVolumes bound to its pods' claims (pv -> pvc -> pod -> node).
		{"pv of a pod's claim", req{verb: "get", resource: "persistentvolumes", nm: "pv-claim"}, allow},
		{"pv of a pod's ephemeral claim", req{verb: "get", resource: "persistentvolumes", nm: "pv-ephemeral"}, allow},
		{"pv of a pod's claim in another namespace", req{verb: "get", resource: "persistentvolumes", nm: "pv-team"}, allow},
		{"pv of another node's pod's claim", req{verb: "get", resource: "persistentvolumes", nm: "pv-n2"}, no},
		{"pv of a mirror pod's claim", req{verb: "get", resource: "persistentvolumes", nm: "pv-mirror"}, no},
		{"pv of an unused claim", req{verb: "get", resource: "persistentvolumes", nm: "pv-unused"}, no},
		{"pv of a claim of that name elsewhere", req{verb: "get", resource: "persistentvolumes", nm: "pv-elsewhere"}, no},
		{"pv not bound", req{verb: "get", resource: "persistentvolumes", nm: "pv-available"}, no},
		{"pv that does not exist", req{verb: "get", resource: "persistentvolumes", nm: "pv1"}, no},
		{"pv without a name", req{verb: "get", resource: "persistentvolumes"}, no},
		{"list pvs", req{verb: "list", resource: "persistentvolumes"}, no},
		{"list the pv of a pod's claim by name", req{verb: "list", resource: "persistentvolumes", nm: "pv-claim", selector: "metadata.name=pv-claim"}, no},
		{"watch the pv of a pod's claim", req{verb: "watch", resource: "persistentvolumes", nm: "pv-claim"}, no},
		{"update the pv of a pod's claim", req{verb: "update", resource: "persistentvolumes", nm: "pv-claim"}, no},
		{"pv status", req{verb: "get", resource: "persistentvolumes", sub: "status", nm: "pv-claim"}, no},
		{"another node gets the pv", req{user: &user.DefaultInfo{Name: "system:node:n2", Groups: []string{user.NodesGroup}},
			verb: "get", resource: "persistentvolumes", nm: "pv-claim"}, no},
		{"the other node gets its own pod's pv", req{user: &user.DefaultInfo{Name: "system:node:n2", Groups: []string{user.NodesGroup}},
			verb: "get", resource: "persistentvolumes", nm: "pv-n2"}, allow},
		{"token of the pod's service account", req{verb: "create", resource: "serviceaccounts", sub: "token", namespace: "ns", nm: "web-sa"}, allow},
		{"token of default for a pod without one", req{verb: "create", resource: "serviceaccounts", sub: "token", namespace: "ns", nm: "default"}, allow},
		{"token of another service account", req{verb: "create", resource: "serviceaccounts", sub: "token", namespace: "ns", nm: "admin"}, no},
		{"get the pod's service account", req{verb: "get", resource: "serviceaccounts", namespace: "ns", nm: "web-sa"}, allow},
		{"create service account", req{verb: "create", resource: "serviceaccounts", namespace: "ns", nm: "x"}, no},
		// Leases.
		{"get own lease", req{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", nm: "n1"}, allow},
		{"update own lease", req{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", nm: "n1"}, allow},
		{"create lease", req{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease"}, allow},
		{"update other lease", req{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", nm: "n2"}, no},
		{"lease elsewhere", req{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "default"}, no},
		{"list leases", req{verb: "list", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease"}, no},
		{"own csinode", req{verb: "update", group: "storage.k8s.io", resource: "csinodes", nm: "n1"}, allow},
		{"other csinode", req{verb: "get", group: "storage.k8s.io", resource: "csinodes", nm: "n2"}, no},
		// Static rules.
		{"create event", req{verb: "create", resource: "events", namespace: "ns"}, allow},
		{"patch event", req{verb: "patch", resource: "events", namespace: "ns", nm: "e"}, allow},
		{"delete event", req{verb: "delete", resource: "events", namespace: "ns", nm: "e"}, no},
		{"events.k8s.io (upstream's node rules since 1.37)", req{verb: "create", group: "events.k8s.io", resource: "events", namespace: "ns"}, allow},
		{"patch events.k8s.io", req{verb: "patch", group: "events.k8s.io", resource: "events", namespace: "ns", nm: "e"}, allow},
		{"delete events.k8s.io", req{verb: "delete", group: "events.k8s.io", resource: "events", namespace: "ns", nm: "e"}, no},
		{"list services", req{verb: "list", resource: "services"}, allow},
		{"tokenreview", req{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"}, allow},
		{"subjectaccessreview", req{verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews"}, allow},
		{"csr", req{verb: "create", group: "certificates.k8s.io", resource: "certificatesigningrequests"}, allow},
		{"runtimeclasses", req{verb: "watch", group: "node.k8s.io", resource: "runtimeclasses"}, allow},
		{"create namespace", req{verb: "create", resource: "namespaces"}, no},
		{"list namespaces", req{verb: "list", resource: "namespaces"}, no},
	}
	a := New(&fakePods{pods: testPods()}, testVolumes())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason, err := a.Authorize(context.Background(), tt.req.attrs(t))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("decision %v (%q), want %v", got, reason, tt.want)
			}
		})
	}
}

// TestNodeAuthorizerPodsError: a failing pod lookup denies (no opinion)
// and reports the error; requests that need no lookup do not call it.
func TestNodeAuthorizerPodsError(t *testing.T) {
	pods := &fakePods{pods: testPods(), err: errors.New("storage down")}
	a := New(pods, testVolumes())
	d, _, err := a.Authorize(context.Background(), req{verb: "get", resource: "secrets", namespace: "ns", nm: "vol-secret"}.attrs(t))
	if d != authorizer.DecisionNoOpinion || err == nil {
		t.Errorf("decision %v err %v, want no opinion and an error", d, err)
	}
	pods.calls = 0
	if d, _, _ := a.Authorize(context.Background(), req{verb: "list", resource: "pods", selector: "spec.nodeName=n1"}.attrs(t)); d != authorizer.DecisionAllow || pods.calls != 0 {
		t.Errorf("list with selector: %v after %d lookups", d, pods.calls)
	}
}

// TestNodeAuthorizerVolumes: without Volumes (no PersistentVolumes served)
// every volume is refused without a lookup; a failing lookup denies and
// reports the error.
func TestNodeAuthorizerVolumes(t *testing.T) {
	get := req{verb: "get", resource: "persistentvolumes", nm: "pv-claim"}.attrs(t)
	pods := &fakePods{pods: testPods()}
	if d, _, err := New(pods, nil).Authorize(context.Background(), get); d != authorizer.DecisionNoOpinion || err != nil || pods.calls != 0 {
		t.Errorf("without Volumes: %v, %v after %d pod lookups; want no opinion, no error, no lookup", d, err, pods.calls)
	}
	failing := testVolumes()
	failing.err = errors.New("storage down")
	if d, _, err := New(pods, failing).Authorize(context.Background(), get); d != authorizer.DecisionNoOpinion || err == nil {
		t.Errorf("failing Volumes: %v, %v; want no opinion and an error", d, err)
	}
}
