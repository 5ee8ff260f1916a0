package apisource

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/internal/nodestatus"
)

// LeaseAPI is the API server as the lease manager uses it.
type LeaseAPI interface {
	GetLease(ctx context.Context, namespace, name string) (*coordv1.Lease, error)
	CreateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error)
	UpdateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error)
}

// LeaseManager renews the node's Lease in kube-node-lease (H.11, H.12):
// every quarter of its duration, retrying a failure after 200 ms doubling
// to 7 s, as the kubelet's lease controller.
type LeaseManager struct {
	API LeaseAPI
	// Node is the node the lease belongs to (its UID becomes the lease's
	// owner once known); nil: not registered yet.
	Node func() *v1.Node
	// Name is the node's name.
	Name string
	// DurationSeconds: 0 is nodestatus.DefaultLeaseDurationSeconds.
	DurationSeconds int32
	Clock           clock.WithTicker
	Logger          *slog.Logger

	lease *coordv1.Lease
}

// Run renews the lease until ctx is done. Blocking.
func (m *LeaseManager) Run(ctx context.Context) {
	if m.DurationSeconds <= 0 {
		m.DurationSeconds = nodestatus.DefaultLeaseDurationSeconds
	}
	if m.Clock == nil {
		m.Clock = clock.RealClock{}
	}
	retry := time.Duration(0)
	for {
		wait := nodestatus.RenewInterval(m.DurationSeconds)
		if err := m.renew(ctx); err != nil {
			retry = nodestatus.NextLeaseRetry(retry)
			wait = retry
			if ctx.Err() == nil {
				m.Logger.Warn("renewing the node lease", "err", err, "retry", retry)
			}
		} else {
			retry = 0
		}
		if !sleep(ctx, m.Clock, wait) {
			return
		}
	}
}

// renew writes the lease, creating it if missing; a conflict or a missing
// lease makes the next attempt read it again.
func (m *LeaseManager) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	node := &v1.Node{}
	if m.Node != nil {
		if n := m.Node(); n != nil {
			node = n
		}
	}
	node.Name = m.Name
	if m.lease == nil {
		l, err := m.API.GetLease(ctx, nodestatus.LeaseNamespace, m.Name)
		switch {
		case apierrors.IsNotFound(err):
			created, err := m.API.CreateLease(ctx, nodestatus.Lease(nil, node, m.DurationSeconds, m.Clock.Now()))
			if err != nil {
				return fmt.Errorf("creating lease: %w", err)
			}
			m.lease = created
			return nil
		case err != nil:
			return fmt.Errorf("reading lease: %w", err)
		}
		m.lease = l
	}
	updated, err := m.API.UpdateLease(ctx, nodestatus.Lease(m.lease, node, m.DurationSeconds, m.Clock.Now()))
	if err != nil {
		m.lease = nil
		return fmt.Errorf("updating lease: %w", err)
	}
	m.lease = updated
	return nil
}
