// Package serviceaccount is kube-apiserver's ServiceAccount admission
// plugin for the shim (upstream's plugin/pkg/admission/serviceaccount,
// which lives in k8s.io/kubernetes, a module the shim's may not import):
// a new pod gets the service account "default" when it names none, must
// name one that exists, inherits its imagePullSecrets when it has none,
// and unless automount is off (the pod's automountServiceAccountToken,
// else the account's) gets the projected volume kube-api-access-<random>
// (a bound token, kube-root-ca.crt's ca.crt and the namespace) mounted at
// /var/run/secrets/kubernetes.io/serviceaccount in each init and app
// container that has no mount there. Mirror pods are left alone.
package serviceaccount

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/utils/ptr"
)

// PluginName is upstream's.
const PluginName = "ServiceAccount"

// Upstream's names and the token's lifetime
// (serviceaccount.WarnOnlyBoundTokenExpirationSeconds).
const (
	DefaultServiceAccountName = "default"
	DefaultAPITokenMountPath  = "/var/run/secrets/kubernetes.io/serviceaccount"
	volumePrefix              = "kube-api-access-"
	tokenExpirationSeconds    = 3607
	rootCAConfigMap           = "kube-root-ca.crt"
)

// Lookup returns a service account, or a NotFound error.
type Lookup func(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)

// Plugin mutates pods at creation. Safe for concurrent use.
type Plugin struct {
	*admission.Handler
	cached, live Lookup
	// retryDefault is how often (and how long apart) "default" is looked
	// up live before the pod is refused: the namespace's controller makes
	// it moments after the namespace.
	retryDefault  int
	retryInterval func() time.Duration
	generateName  func(prefix string) string
}

var _ admission.MutationInterface = (*Plugin)(nil)

// New returns the plugin looking service accounts up in cached (an
// informer's lister) and then live (the API), as upstream does.
func New(cached, live Lookup) *Plugin {
	return &Plugin{
		Handler: admission.NewHandler(admission.Create), cached: cached, live: live, retryDefault: 10,
		retryInterval: func() time.Duration { return time.Duration(100+rand.IntN(100)) * time.Millisecond },
		generateName:  names.SimpleNameGenerator.GenerateName,
	}
}

// Admit implements admission.MutationInterface.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != corev1.Resource("pods") || a.GetSubresource() != "" {
		return nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return nil
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return nil
	}
	// The deprecated spec.serviceAccount names it when
	// serviceAccountName does not, and echoes it (upstream's conversion).
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	sa, err := p.serviceAccount(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		p.mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 {
		for _, s := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s.Name})
		}
	}
	return nil
}

// serviceAccount is upstream's getServiceAccount: the cache, then the
// API (retryDefault times for "default", once for others).
func (p *Plugin) serviceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa, err := p.cached(ctx, namespace, name)
	if err == nil {
		return sa, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	attempts := 1
	if name == DefaultServiceAccountName {
		attempts = p.retryDefault
	}
	for i := range attempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(p.retryInterval()):
			}
		}
		sa, err := p.live(ctx, namespace, name)
		if err == nil {
			return sa, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
}

// automount is upstream's shouldAutomount: the pod's choice, else the
// account's, else true.
func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken is upstream's mountServiceAccountToken: a kube-api-access-*
// volume the pod has is reused, else a new one is added when a container
// needs it.
func (p *Plugin) mountToken(pod *corev1.Pod) {
	name, has := "", false
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, volumePrefix) {
			name, has = v.Name, true
			break
		}
	}
	if name == "" {
		name = p.generateName(volumePrefix)
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: DefaultAPITokenMountPath}
	needed := false
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if !mountsAt(list[i], DefaultAPITokenMountPath) {
				list[i].VolumeMounts = append(list[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if !has && needed {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()}})
	}
}

func mountsAt(c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// TokenVolumeSource is upstream's: the bound token, the cluster's CA and
// the namespace, mode 0644.
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To(corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(tokenExpirationSeconds))}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}
}
