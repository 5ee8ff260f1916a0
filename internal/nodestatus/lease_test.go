package nodestatus

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLeaseRenewal_H11_H12: a new lease in kube-node-lease held by the
// node, 40 s, renewed at now; the owner reference once the Node has a
// UID; a renewal keeps the rest and does not touch its base.
func TestLeaseRenewal_H11_H12(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "edge-1"}}
	l := Lease(nil, node, DefaultLeaseDurationSeconds, t0)
	if l.Name != "edge-1" || l.Namespace != "kube-node-lease" || *l.Spec.HolderIdentity != "edge-1" ||
		*l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(t0) || len(l.OwnerReferences) != 0 {
		t.Fatalf("new lease %+v", l)
	}
	node.UID = "uid-1"
	renewed := Lease(l, node, DefaultLeaseDurationSeconds, t0.Add(10*time.Second))
	if got := fmt.Sprint(renewed.OwnerReferences); got != "[{v1 Node edge-1 uid-1 <nil> <nil>}]" {
		t.Errorf("owner references %s", got)
	}
	if !renewed.Spec.RenewTime.Time.Equal(t0.Add(10*time.Second)) || !l.Spec.RenewTime.Time.Equal(t0) || len(l.OwnerReferences) != 0 {
		t.Errorf("renewal: %v, base changed to %v %v", renewed.Spec.RenewTime, l.Spec.RenewTime, l.OwnerReferences)
	}
	if d := RenewInterval(DefaultLeaseDurationSeconds); d != 10*time.Second {
		t.Errorf("renew interval %v, want 10s", d)
	}
}

// TestLeaseRetry_H11: failed updates retry after 200 ms, doubling to 7 s.
func TestLeaseRetry_H11(t *testing.T) {
	var got []time.Duration
	var d time.Duration
	for range 8 {
		d = NextLeaseRetry(d)
		got = append(got, d)
	}
	if fmt.Sprint(got) != "[200ms 400ms 800ms 1.6s 3.2s 6.4s 7s 7s]" {
		t.Errorf("retries %v", got)
	}
}
