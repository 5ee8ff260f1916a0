package staticpods

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/manifests"
	"github.com/skiffnode/skiff/podspec"
)

// Static objects: ConfigMap and Secret documents in the manifest directory
// are objects of their namespace ("default" if unset) that static pods may
// reference (env, volumes). Unlike pods their names get no node suffix:
// pods refer to them by the name written in the file.

// parseObjects defaults and validates the ConfigMaps and Secrets of m, read
// from the file at path, in place.
func parseObjects(nodeName, path string, m *manifests.Manifest) error {
	for _, cm := range m.ConfigMaps {
		applyObjectDefaults(&cm.ObjectMeta, nodeName, path, "ConfigMap")
		if errs := podspec.ValidateConfigMap(cm); len(errs) > 0 {
			return fmt.Errorf("%s: configmap %q: %w", path, cm.Namespace+"/"+cm.Name, errs.ToAggregate())
		}
	}
	for _, s := range m.Secrets {
		applyObjectDefaults(&s.ObjectMeta, nodeName, path, "Secret")
		podspec.SetSecretDefaults(s)
		if errs := podspec.ValidateSecret(s); len(errs) > 0 {
			return fmt.Errorf("%s: secret %q: %w", path, s.Namespace+"/"+s.Name, errs.ToAggregate())
		}
	}
	return nil
}

// applyObjectDefaults sets the namespace "default" if empty and, unless the
// manifest sets one, a UID that depends on the node, the file, the kind and
// the object's namespace/name only, so an edit of the object's data keeps
// its UID as an update through the API would.
func applyObjectDefaults(meta *metav1.ObjectMeta, nodeName, path, kind string) {
	if meta.Namespace == "" {
		meta.Namespace = metav1.NamespaceDefault
	}
	if meta.UID == "" {
		h := md5.New()
		_, _ = fmt.Fprintf(h, "host:%s", nodeName)
		_, _ = fmt.Fprintf(h, "file:%s", path)
		_, _ = fmt.Fprintf(h, "%s:%s/%s", kind, meta.Namespace, meta.Name)
		meta.UID = types.UID(hex.EncodeToString(h.Sum(nil)))
	}
}

// objectKeys returns the "kind namespace/name" keys of res's objects, in
// document order (ConfigMaps first).
func objectKeys(res fileResult) []string {
	keys := make([]string, 0, len(res.configMaps)+len(res.secrets))
	for _, cm := range res.configMaps {
		keys = append(keys, "configmap "+cm.Namespace+"/"+cm.Name)
	}
	for _, s := range res.secrets {
		keys = append(keys, "secret "+s.Namespace+"/"+s.Name)
	}
	return keys
}

// checkObjectDuplicates reports the first object of path whose kind,
// namespace and name are taken by an earlier file (the first file in name
// order wins, as for pods) or by an earlier document of the same file.
func checkObjectDuplicates(path string, res fileResult, names map[string]string) error {
	local := map[string]bool{}
	for _, key := range objectKeys(res) {
		if other, ok := names[key]; ok {
			return fmt.Errorf("%s: %s is already defined by %s (the first file in name order wins)", path, key, other)
		}
		if local[key] {
			return fmt.Errorf("%s: %s is defined twice in this file", path, key)
		}
		local[key] = true
	}
	return nil
}

// addObjects records res's objects, from path, in snap and names.
func addObjects(snap *snapshot, path string, res fileResult, names map[string]string) {
	for _, key := range objectKeys(res) {
		names[key] = path
	}
	snap.configMaps = append(snap.configMaps, res.configMaps...)
	snap.secrets = append(snap.secrets, res.secrets...)
}

// ObjectStore receives the static objects: the complete set after every
// listing (objects.Store implements it).
type ObjectStore interface {
	Replace(cms []*v1.ConfigMap, secrets []*v1.Secret)
}
