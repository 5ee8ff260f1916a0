package podspec

import (
	"encoding/json"
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxObjectSize is the API server's bound on the total size of a ConfigMap's
// or Secret's values (core.MaxSecretSize: 1 MiB).
const MaxObjectSize = 1 << 20

// SetSecretDefaults does to a decoded Secret what the API server does before
// validation: stringData is merged into data (a key in both takes the
// stringData value) and cleared, and an empty type becomes Opaque.
func SetSecretDefaults(s *v1.Secret) {
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
	if s.Type == "" {
		s.Type = v1.SecretTypeOpaque
	}
}

// objectFieldPaths are the ConfigMap and Secret fields skiff accepts (see
// supportedFieldPaths): the ones pods can use, plus immutable, which is
// accepted and has no effect (a static object changes only when its file
// does).
var objectFieldPaths = []string{
	"apiVersion", "kind",
	"metadata.name", "metadata.namespace", "metadata.uid",
	"metadata.labels", "metadata.annotations",
	"data", "binaryData", "stringData", "type", "immutable",
}

// ValidateConfigMap checks a ConfigMap whose namespace is set as the API
// server does on create (name a DNS-1123 subdomain, keys valid config map
// keys, a key not in both data and binaryData, at most MaxObjectSize bytes
// of values) and rejects metadata skiff does not use. Deterministic; it
// does not modify cm.
func ValidateConfigMap(cm *v1.ConfigMap) field.ErrorList {
	errs := validateObjectMeta(&cm.ObjectMeta)
	size := 0
	for _, key := range sortedKeys(cm.Data) {
		p := field.NewPath("data").Key(key)
		errs = append(errs, invalidIf(validation.IsConfigMapKey(key), p, key)...)
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(p, key, "duplicate of key present in binaryData"))
		}
		size += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		errs = append(errs, invalidIf(validation.IsConfigMapKey(key), field.NewPath("binaryData").Key(key), key)...)
		size += len(cm.BinaryData[key])
	}
	if size > MaxObjectSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", MaxObjectSize))
	}
	return append(errs, newFieldAllowList(objectFieldPaths).walkStruct(reflect.ValueOf(cm).Elem(), nil, "")...)
}

// ValidateSecret checks a defaulted Secret (see SetSecretDefaults) whose
// namespace is set as the API server does on create: name, keys, size, and
// the keys each well-known type requires (dockercfg and dockerconfigjson
// content must be JSON). Other types are accepted, as by the API server.
// Deterministic; it does not modify s.
func ValidateSecret(s *v1.Secret) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta)
	dataPath := field.NewPath("data")
	size := 0
	for _, key := range sortedKeys(s.Data) {
		errs = append(errs, invalidIf(validation.IsConfigMapKey(key), dataPath.Key(key), key)...)
		size += len(s.Data[key])
	}
	if size > MaxObjectSize {
		errs = append(errs, field.TooLong(dataPath, "", MaxObjectSize))
	}
	errs = append(errs, validateSecretType(s, dataPath)...)
	return append(errs, newFieldAllowList(objectFieldPaths).walkStruct(reflect.ValueOf(s).Elem(), nil, "")...)
}

// validateSecretType checks the keys of the well-known secret types as
// upstream's ValidateSecret does.
func validateSecretType(s *v1.Secret, dataPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	requireJSON := func(key string) {
		b, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			return
		}
		if err := json.Unmarshal(b, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case v1.SecretTypeServiceAccountToken:
		if s.Annotations[v1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(v1.ServiceAccountNameKey), ""))
		}
	case v1.SecretTypeDockercfg:
		requireJSON(v1.DockerConfigKey)
	case v1.SecretTypeDockerConfigJson:
		requireJSON(v1.DockerConfigJsonKey)
	case v1.SecretTypeBasicAuth:
		_, user := s.Data[v1.BasicAuthUsernameKey]
		_, pass := s.Data[v1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(dataPath.Key(v1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(v1.BasicAuthPasswordKey), ""))
		}
	case v1.SecretTypeSSHAuth:
		if len(s.Data[v1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(v1.SSHAuthPrivateKey), ""))
		}
	case v1.SecretTypeTLS:
		for _, key := range []string{v1.TLSCertKey, v1.TLSPrivateKeyKey} {
			if _, ok := s.Data[key]; !ok {
				errs = append(errs, field.Required(dataPath.Key(key), ""))
			}
		}
	}
	return errs
}

// sortedKeys returns m's keys in order, so errors come in a stable order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
