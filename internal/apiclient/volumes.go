package apiclient

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// GetPersistentVolumeClaim reads the claim namespace/name (the Node
// authorizer allows those the node's pods use). Blocking.
func (c *Client) GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	out := &v1.PersistentVolumeClaim{}
	return out, c.core.Get().Namespace(namespace).Resource("persistentvolumeclaims").Name(name).Do(ctx).Into(out)
}

// GetPersistentVolume reads the PersistentVolume name (the Node authorizer
// allows those bound to a claim the node's pods use). Blocking.
func (c *Client) GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	out := &v1.PersistentVolume{}
	return out, c.core.Get().Resource("persistentvolumes").Name(name).Do(ctx).Into(out)
}
