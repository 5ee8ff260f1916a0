package manifests

import (
	v1 "k8s.io/api/core/v1"
)

// Manifest is the content of one manifest file: its Pods, ConfigMaps and
// Secrets, each list in document order.
type Manifest struct {
	Pods       []*v1.Pod
	ConfigMaps []*v1.ConfigMap
	Secrets    []*v1.Secret
}

// manifestKinds are the kinds DecodeManifest accepts.
var manifestKinds = []string{"Pod", "ConfigMap", "Secret"}

// DecodeManifest is Decode for a manifest directory that also holds the
// objects static pods may reference: each document is a Pod, a ConfigMap or
// a Secret (apiVersion v1). Decoding is as strict as Decode's and errors
// name the document and field path the same way; Secret data and ConfigMap
// binaryData are base64 in the manifest, as in the API. It sets no
// defaults and does not validate (see podspec.SetSecretDefaults,
// podspec.ValidateConfigMap, podspec.ValidateSecret). Any error means no
// objects. Pure and safe for
// concurrent use.
func DecodeManifest(data []byte) (*Manifest, error) {
	m := &Manifest{}
	err := decodeStream(data, manifestKinds, func(obj any) {
		switch o := obj.(type) {
		case *v1.Pod:
			m.Pods = append(m.Pods, o)
		case *v1.ConfigMap:
			m.ConfigMaps = append(m.ConfigMaps, o)
		case *v1.Secret:
			m.Secrets = append(m.Secrets, o)
		}
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
