package apisource

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// ClaimAPI is the API server as Claims uses it.
type ClaimAPI interface {
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
}

// Claims reads the PersistentVolumeClaims of the node's pods and the
// PersistentVolumes bound to them for the volume manager (its
// volumes.ClaimSource): one GET each time, nothing cached or watched, as
// a pod's volumes are set up once per pod start (and once after an agent
// restart); the kubelet reads them the same way. Each call is bounded by
// apiCallTimeout. The offline copy holds neither: without the API server
// such a volume fails to set up and is retried. Safe for concurrent use.
type Claims struct {
	api ClaimAPI
}

// NewClaims returns Claims reading through api.
func NewClaims(api ClaimAPI) *Claims { return &Claims{api: api} }

// PersistentVolumeClaim reads claim namespace/name; an API error (NotFound
// among them) is returned as it is. Blocking.
func (c *Claims) PersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	return c.api.GetPersistentVolumeClaim(ctx, namespace, name)
}

// PersistentVolume reads the PersistentVolume name; an API error is
// returned as it is. Blocking.
func (c *Claims) PersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	return c.api.GetPersistentVolume(ctx, name)
}
