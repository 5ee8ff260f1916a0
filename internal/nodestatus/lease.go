package nodestatus

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The node lease's defaults (H.11, H.12): the kubelet's
// nodeLeaseDurationSeconds, its renew interval (a quarter of the
// duration) and the lease controller's retry bounds
// (k8s.io/component-helpers/apimachinery/lease).
const (
	LeaseNamespace              = "kube-node-lease"
	DefaultLeaseDurationSeconds = int32(40)
	leaseRenewFraction          = 0.25
	firstLeaseRetry             = 200 * time.Millisecond
	maxLeaseRetry               = 7 * time.Second
)

// RenewInterval is how often a lease of durationSeconds is renewed: a
// quarter of it (10 s for the default 40 s). Pure.
func RenewInterval(durationSeconds int32) time.Duration {
	return time.Duration(float64(time.Duration(durationSeconds)*time.Second) * leaseRenewFraction)
}

// NextLeaseRetry is the wait before the next attempt to create or renew
// the lease after a failure: 200 ms after the first (prev 0), doubling up
// to 7 s. Pure.
func NextLeaseRetry(prev time.Duration) time.Duration {
	if prev <= 0 {
		return firstLeaseRetry
	}
	return min(2*prev, maxLeaseRetry)
}

// Lease is the node's lease renewed at now, as the kubelet's lease
// controller writes it: base (nil: a new lease named after the node in
// kube-node-lease, held by the node) with the duration and renew time
// set, and, when it has none, an owner reference to node (once the Node
// exists, so its deletion takes the lease along). Pure: base is copied.
func Lease(base *coordinationv1.Lease, node *v1.Node, durationSeconds int32, now time.Time) *coordinationv1.Lease {
	var l *coordinationv1.Lease
	if base == nil {
		holder := node.Name
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: node.Name, Namespace: LeaseNamespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
		}
	} else {
		l = base.DeepCopy()
	}
	l.Spec.LeaseDurationSeconds = &durationSeconds
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if len(l.OwnerReferences) == 0 && node.UID != "" {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	}
	return l
}
