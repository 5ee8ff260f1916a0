package noderestriction

import (
	"context"
	"fmt"
	"maps"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/admission"

	nodeauthz "github.com/skiffnode/skiff/shim/authz/node"
)

// pod: a node creates only mirror pods of its own and deletes only pods
// bound to it (upstream's admitPod).
func (p *Plugin) pod(ctx context.Context, node string, a admission.Attributes) error {
	switch a.GetOperation() {
	case admission.Create:
		return p.mirrorPod(ctx, node, a)
	case admission.Delete:
		old, ok := a.GetOldObject().(*corev1.Pod)
		if !ok {
			return forbidden(a, "unexpected type %T", a.GetOldObject())
		}
		if old.Spec.NodeName != node {
			return forbidden(a, "node %q can only delete pods with spec.nodeName set to itself", node)
		}
		return nil
	}
	return forbidden(a, "unexpected operation %q, node %q can only create and delete mirror pods", a.GetOperation(), node)
}

// mirrorPod: upstream's admitPodCreate. The pod is a mirror pod bound to
// the node, its one owner is the node (controller, UID checked, no
// blockOwnerDeletion), and it references no other API object.
func (p *Plugin) mirrorPod(ctx context.Context, node string, a admission.Attributes) error {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return forbidden(a, "unexpected type %T", a.GetObject())
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return forbidden(a, "pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, node)
	}
	if pod.Spec.NodeName != node {
		return forbidden(a, "node %q can only create pods with spec.nodeName set to itself", node)
	}
	switch refs := pod.OwnerReferences; {
	case len(refs) > 1:
		return forbidden(a, "node %q can only create pods with a single owner reference set to itself", node)
	case len(refs) == 0 || refs[0].APIVersion != "v1" || refs[0].Kind != "Node" || refs[0].Name != node:
		return forbidden(a, "node %q can only create pods with an owner reference set to itself", node)
	case refs[0].Controller == nil || !*refs[0].Controller:
		return forbidden(a, "node %q can only create pods with a controller owner reference set to itself", node)
	case refs[0].BlockOwnerDeletion != nil && *refs[0].BlockOwnerDeletion:
		return forbidden(a, "node %q must not set blockOwnerDeletion on an owner reference", node)
	}
	n, err := p.lookup.Node(ctx, node)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		return forbidden(a, "error looking up node %s to verify uid: %w", node, err)
	}
	if owner := pod.OwnerReferences[0].UID; owner != n.UID {
		return forbidden(a, "node %s UID mismatch: expected %s got %s", node, owner, n.UID)
	}
	resource, err := apiReference(pod)
	if err != nil {
		return forbidden(a, "error checking mirror pod for API references: %w", err)
	}
	if resource != "" {
		return forbidden(a, "node %q can not create pods that reference %s", node, resource)
	}
	return nil
}

// apiReference names the first kind of API object pod references ("" if
// none), as upstream's pkg/api/pod HasAPIObjectReference: a mirror pod
// must not give its node access to anything. Unknown volume sources are
// errors.
func apiReference(pod *corev1.Pod) (string, error) {
	if pod.Spec.ServiceAccountName != "" {
		return "serviceaccounts", nil
	}
	found := ""
	nodeauthz.VisitReferences(pod, func(resource, _ string) bool {
		if resource == "secrets" || resource == "configmaps" {
			found = resource
		}
		return found == ""
	})
	if found != "" {
		return found, nil
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return "resourceclaims", nil
	}
	for i := range pod.Spec.Volumes {
		if r, err := volumeReference(&pod.Spec.Volumes[i]); r != "" || err != nil {
			return r, err
		}
	}
	return "", nil
}

// volumeReference is the kind of API object a volume needs, "" if none.
func volumeReference(v *corev1.Volume) (string, error) {
	switch s := &v.VolumeSource; {
	case s.AWSElasticBlockStore != nil, s.AzureDisk != nil, s.CephFS != nil, s.Cinder != nil,
		s.DownwardAPI != nil, s.EmptyDir != nil, s.FC != nil, s.FlexVolume != nil, s.Flocker != nil, s.GCEPersistentDisk != nil,
		s.GitRepo != nil, s.HostPath != nil, s.Image != nil, s.ISCSI != nil, s.NFS != nil, s.PhotonPersistentDisk != nil,
		s.PortworxVolume != nil, s.Quobyte != nil, s.RBD != nil, s.ScaleIO != nil, s.StorageOS != nil, s.VsphereVolume != nil:
		return "", nil
	case s.ConfigMap != nil:
		return "configmaps (via configmap volumes)", nil
	case s.Secret != nil:
		return "secrets (via secret volumes)", nil
	case s.CSI != nil:
		return "csidrivers (via CSI volumes)", nil
	case s.Glusterfs != nil:
		return "endpoints (via glusterFS volumes)", nil
	case s.PersistentVolumeClaim != nil:
		return "persistentvolumeclaims", nil
	case s.Ephemeral != nil:
		return "persistentvolumeclaims (via ephemeral volumes)", nil
	case s.AzureFile != nil:
		return "secrets (via azureFile volumes)", nil
	case s.Projected != nil:
		for _, src := range s.Projected.Sources {
			switch {
			case src.ConfigMap != nil:
				return "configmaps (via projected volumes)", nil
			case src.Secret != nil:
				return "secrets (via projected volumes)", nil
			case src.ServiceAccountToken != nil:
				return "serviceaccounts (via projected volumes)", nil
			case src.ClusterTrustBundle != nil:
				return "clustertrustbundles", nil
			case src.PodCertificate != nil:
				return "podcertificates", nil
			case src.DownwardAPI == nil:
				return "", fmt.Errorf("unknown source for projected volume %q", v.Name)
			}
		}
		return "", nil
	}
	return "", fmt.Errorf("unknown volume type for volume  %q", v.Name)
}

// podStatus: a node updates the status of pods bound to it only, and not
// their labels or resource claim statuses (upstream's admitPodStatus).
func podStatus(node string, a admission.Attributes) error {
	if a.GetOperation() != admission.Update {
		return forbidden(a, "unexpected operation %q", a.GetOperation())
	}
	old, ok := a.GetOldObject().(*corev1.Pod)
	if !ok {
		return forbidden(a, "unexpected type %T", a.GetOldObject())
	}
	if old.Spec.NodeName != node {
		return forbidden(a, "node %q can only update pod status for pods with spec.nodeName set to itself", node)
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return forbidden(a, "unexpected type %T", a.GetObject())
	}
	switch {
	case !maps.Equal(old.Labels, pod.Labels):
		return forbidden(a, "node %q cannot update labels through pod status", node)
	case !slices.EqualFunc(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses, sameClaimStatus):
		return forbidden(a, "node %q cannot update resource claim statues", node)
	case !apiequality.Semantic.DeepEqual(old.Status.ExtendedResourceClaimStatus, pod.Status.ExtendedResourceClaimStatus):
		return forbidden(a, "node %q cannot update extended resource claim status", node)
	}
	return nil
}

func sameClaimStatus(x, y corev1.PodResourceClaimStatus) bool {
	return x.Name == y.Name && (x.ResourceClaimName == nil) == (y.ResourceClaimName == nil) &&
		(x.ResourceClaimName == nil || *x.ResourceClaimName == *y.ResourceClaimName)
}

// eviction: a node evicts only pods bound to it (upstream's
// admitPodEviction; the pod's name is the request's, else the Eviction's).
func (p *Plugin) eviction(ctx context.Context, node string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return forbidden(a, "unexpected operation %s", a.GetOperation())
	}
	name := a.GetName()
	if name == "" {
		if obj, err := meta.Accessor(a.GetObject()); err == nil {
			name = obj.GetName()
		}
		if name == "" {
			return forbidden(a, "could not determine pod from request data")
		}
	}
	pod, err := p.lookup.Pod(ctx, a.GetNamespace(), name)
	if err != nil {
		return lookupErr(a, err)
	}
	if pod.Spec.NodeName != node {
		return forbidden(a, "node %s can only evict pods with spec.nodeName set to itself", node)
	}
	return nil
}

// token: a node's TokenRequest is bound to a pod (by name and UID)
// scheduled on the node, for no audience or one its pod projects a token
// for (upstream's admitServiceAccount with ServiceAccountNodeAudienceRestriction,
// on in 1.34, without the CSI driver audiences: the shim serves no CSIDrivers).
func (p *Plugin) token(ctx context.Context, node string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create || a.GetSubresource() != "token" {
		return nil
	}
	tr, ok := a.GetObject().(*authenticationv1.TokenRequest)
	if !ok {
		return forbidden(a, "unexpected type %T", a.GetObject())
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return forbidden(a, "node requested token not bound to a pod")
	}
	if ref.UID == "" {
		return forbidden(a, "node requested token with a pod binding without a uid")
	}
	pod, err := p.lookup.Pod(ctx, a.GetNamespace(), ref.Name)
	if err != nil {
		return lookupErr(a, err)
	}
	if ref.UID != pod.UID {
		return forbidden(a, "the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)
	}
	if pod.Spec.NodeName != node {
		return forbidden(a, "node requested token bound to a pod scheduled on a different node")
	}
	if len(tr.Spec.Audiences) > 1 {
		return forbidden(a, "node may only request 0 or 1 audiences")
	}
	audience := ""
	if len(tr.Spec.Audiences) == 1 {
		audience = tr.Spec.Audiences[0]
	}
	if !projectsAudience(pod, audience) {
		return forbidden(a, "audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, a.GetUserInfo().GetName())
	}
	return nil
}

// projectsAudience reports whether a projected service account token
// volume of pod asks for audience.
func projectsAudience(pod *corev1.Pod, audience string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil && src.ServiceAccountToken.Audience == audience {
				return true
			}
		}
	}
	return false
}
