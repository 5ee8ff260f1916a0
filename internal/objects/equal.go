package objects

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
)

func sameObjects[T any](a, b map[string]T, eq func(x, y T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || !eq(x, y) {
			return false
		}
	}
	return true
}

func equalConfigMap(a, b *v1.ConfigMap) bool {
	return a.UID == b.UID && maps.Equal(a.Data, b.Data) &&
		maps.EqualFunc(a.BinaryData, b.BinaryData, slices.Equal[[]byte]) &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations)
}

func equalSecret(a, b *v1.Secret) bool {
	return a.UID == b.UID && a.Type == b.Type &&
		maps.EqualFunc(a.Data, b.Data, slices.Equal[[]byte]) &&
		maps.Equal(a.StringData, b.StringData) &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations)
}
