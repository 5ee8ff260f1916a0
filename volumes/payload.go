package volumes

import (
	"errors"
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/skiffnode/skiff/internal/objects"
)

// defaultFileMode is the mode of projected files when the volume sets no
// defaultMode (the API server's default).
const defaultFileMode int32 = 0o644

// errNoObjects stands for the object store of an agent that has none.
type noObjects struct{}

func (noObjects) ConfigMap(ns, name string) (*v1.ConfigMap, error) {
	return nil, fmt.Errorf("configmap %q in namespace %q: %w", name, ns, objects.ErrNotFound)
}

func (noObjects) Secret(ns, name string) (*v1.Secret, error) {
	return nil, fmt.Errorf("secret %q in namespace %q: %w", name, ns, objects.ErrNotFound)
}

func modeOr(m *int32, def int32) int32 {
	if m != nil {
		return *m
	}
	return def
}

// keyPayload is the kubelet's configmap/secret MakePayload: every key (no
// items) or the listed items; a missing key fails unless optional. kind
// names the object in the error ("config" or "secret").
func keyPayload(data map[string][]byte, items []v1.KeyToPath, defaultMode int32, optional bool, kind string) (map[string]file, error) {
	out := make(map[string]file, len(data))
	if len(items) == 0 {
		for k, v := range data {
			out[k] = file{Data: v, Mode: defaultMode}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			if kind == "secret" {
				return nil, fmt.Errorf("references non-existent secret key: %s", it.Key)
			}
			return nil, fmt.Errorf("configmap references non-existent config key: %s", it.Key)
		}
		out[it.Path] = file{Data: v, Mode: modeOr(it.Mode, defaultMode)}
	}
	return out, nil
}

// configMapData merges a ConfigMap's data and binaryData.
func configMapData(cm *v1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}

// secretData merges a Secret's data and stringData (stringData wins, as
// the API server's conversion does).
func secretData(s *v1.Secret) map[string][]byte {
	out := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		out[k] = v
	}
	for k, v := range s.StringData {
		out[k] = []byte(v)
	}
	return out
}

// configMapPayload reads the ConfigMap and builds the files; a missing
// object fails as in the kubelet (`configmap "x" not found`) unless
// optional, which gives an empty volume.
func configMapPayload(get objects.Getter, ns, name string, items []v1.KeyToPath, defaultMode int32, optional bool) (map[string]file, error) {
	cm, err := get.ConfigMap(ns, name)
	if err != nil {
		if errors.Is(err, objects.ErrNotFound) {
			if optional {
				return map[string]file{}, nil
			}
			return nil, fmt.Errorf("configmap %q not found", name)
		}
		return nil, err
	}
	return keyPayload(configMapData(cm), items, defaultMode, optional, "config")
}

// secretPayload is configMapPayload for a Secret.
func secretPayload(get objects.Getter, ns, name string, items []v1.KeyToPath, defaultMode int32, optional bool) (map[string]file, error) {
	s, err := get.Secret(ns, name)
	if err != nil {
		if errors.Is(err, objects.ErrNotFound) {
			if optional {
				return map[string]file{}, nil
			}
			return nil, fmt.Errorf("secret %q not found", name)
		}
		return nil, err
	}
	return keyPayload(secretData(s), items, defaultMode, optional, "secret")
}

// projectedPayload merges the sources of projected volume name in order,
// as the kubelet's projected plugin does (a later source's path wins).
// Every source is read even after one failed, so that each pod
// certificate is requested at once; the errors are returned together, as
// the kubelet's aggregate (one error: its own text).
func (m *Manager) projectedPayload(pod *v1.Pod, name string, src *v1.ProjectedVolumeSource) (map[string]file, error) {
	def := modeOr(src.DefaultMode, defaultFileMode)
	cred := credentialFile(pod, def)
	out := map[string]file{}
	var errs []error
	for i, s := range src.Sources {
		part, err := m.sourcePayload(pod, name, i, &s, def, cred)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		maps.Copy(out, part)
	}
	if len(errs) > 0 {
		return nil, utilerrors.NewAggregate(errs)
	}
	return out, nil
}

// sourcePayload is the files of source i of projected volume name: with
// mode def, or for credentials (token, trust anchors, certificates) cred's
// mode and owner.
func (m *Manager) sourcePayload(pod *v1.Pod, name string, i int, s *v1.VolumeProjection, def int32, cred file) (map[string]file, error) {
	switch {
	case s.ConfigMap != nil:
		return configMapPayload(m.objects, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, def, isTrue(s.ConfigMap.Optional))
	case s.Secret != nil:
		return secretPayload(m.objects, pod.Namespace, s.Secret.Name, s.Secret.Items, def, isTrue(s.Secret.Optional))
	case s.DownwardAPI != nil:
		return downwardAPIPayload(pod, s.DownwardAPI.Items, def, m.cfg.Allocatable)
	case s.ServiceAccountToken != nil:
		return m.tokenPayload(pod, s.ServiceAccountToken, cred)
	case s.ClusterTrustBundle != nil:
		return m.trustBundlePayload(s.ClusterTrustBundle, cred)
	case s.PodCertificate != nil:
		return m.podCertificatePayload(pod, name, i, s.PodCertificate, cred)
	}
	return nil, fmt.Errorf("projected source %d: this source type is not supported by skiff yet", i)
}

// credentialFile is the kubelet's mode and owner of a projected credential
// file: 0600, owned by the user all the pod's containers run as (FsUserFrom)
// if there is one, or read by the pod's fsGroup once the volume's
// ownership gives it the group (0640); else mode, owned by the agent.
func credentialFile(pod *v1.Pod, mode int32) file {
	user := podFSUser(pod)
	if fsGroup, _ := podFSGroup(pod); user != nil || fsGroup != nil {
		return file{Mode: 0o600, Owner: user}
	}
	return file{Mode: mode}
}

// podFSUser is the kubelet's FsUserFrom: the runAsUser every container
// (init, regular and ephemeral) runs as, from its own or the pod's
// securityContext; nil if one has none or two differ.
func podFSUser(pod *v1.Pod) *int64 {
	var user *int64
	var podUser *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		podUser = sc.RunAsUser
	}
	same := func(sc *v1.SecurityContext) bool {
		u := podUser
		if sc != nil && sc.RunAsUser != nil {
			u = sc.RunAsUser
		}
		if u == nil || (user != nil && *user != *u) {
			return false
		}
		user = u
		return true
	}
	for _, c := range pod.Spec.InitContainers {
		if !same(c.SecurityContext) {
			return nil
		}
	}
	for _, c := range pod.Spec.Containers {
		if !same(c.SecurityContext) {
			return nil
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if !same(c.SecurityContext) {
			return nil
		}
	}
	return user
}

func isTrue(b *bool) bool { return b != nil && *b }

// defaultTokenExpiration is a projected token's life when the source sets
// none (the API server's default, 1 h).
const defaultTokenExpiration = 3600

// tokenPayload is the kubelet's projected serviceAccountToken: a token of
// the pod's service account bound to the pod, for the audience (empty:
// the API server's), written with f's mode and owner.
func (m *Manager) tokenPayload(pod *v1.Pod, s *v1.ServiceAccountTokenProjection, f file) (map[string]file, error) {
	if m.cfg.Tokens == nil {
		return nil, errors.New("failed to fetch token: serviceAccountToken needs an API server to issue tokens (skiff agent --kubeconfig)")
	}
	exp := int64(defaultTokenExpiration)
	if s.ExpirationSeconds != nil {
		exp = *s.ExpirationSeconds
	}
	tok, err := m.cfg.Tokens.Token(pod, s.Audience, exp)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch token: %w", err)
	}
	f.Data = []byte(tok)
	return map[string]file{s.Path: f}, nil
}

// errNoTrustBundles is the kubelet's error for a clusterTrustBundle source
// without an API server.
var errNoTrustBundles = errors.New("ClusterTrustBundle projection is not supported in static kubelet mode")

// trustBundlePayload is the kubelet's projected clusterTrustBundle: the
// anchors of the named bundle, or of the signer's bundles matching the
// selector, in one file with f's mode and owner; optional allows none.
func (m *Manager) trustBundlePayload(s *v1.ClusterTrustBundleProjection, f file) (map[string]file, error) {
	if m.cfg.TrustBundles == nil {
		return nil, errNoTrustBundles
	}
	var (
		data []byte
		err  error
	)
	switch {
	case s.Name != nil:
		data, err = m.cfg.TrustBundles.ByName(*s.Name, isTrue(s.Optional))
	case s.SignerName != nil:
		data, err = m.cfg.TrustBundles.BySigner(*s.SignerName, s.LabelSelector, isTrue(s.Optional))
	default:
		err = errors.New("ClusterTrustBundle projection requires either name or signerName to be set")
	}
	if err != nil {
		return nil, err
	}
	f.Data = data
	return map[string]file{s.Path: f}, nil
}
