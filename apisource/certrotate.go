package apisource

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
)

// Retry delays of a failed renewal: from certRetryInitial, doubling, to
// certRetryMax (the kubelet's certificate manager backs off likewise).
const (
	certRetryInitial = 2 * time.Second
	certRetryMax     = 5 * time.Minute
)

// CertRotator renews the node's client certificate before it expires, as
// the kubelet's certificate manager does with --rotate-certificates: at a
// random point between 70 % and 90 % of the certificate's lifetime it
// asks for a new one (RequestNodeCertificate with the node's current
// credentials: the controller manager approves such a renewal when
// system:nodes may create certificatesigningrequests/selfnodeclient, as
// kubeadm grants) and stores it, where the API client's file-based
// credentials pick it up (client-go reloads certificate files).
type CertRotator struct {
	API  CSRAPI
	Node string
	// Current returns the certificate in use. Required.
	Current func() (*x509.Certificate, error)
	// Store replaces the certificate and key in use (PEM), atomically.
	// Required.
	Store func(certPEM, keyPEM []byte) error
	// Clock: nil, the real clock.
	Clock clock.WithTicker
	// Jitter returns a number in [0, 1) that places the renewal in the
	// window; nil: random.
	Jitter func() float64
	Log    *slog.Logger
}

// RotationDeadline is when a certificate valid from notBefore to notAfter
// is renewed: at 70 % plus jitter (in [0, 1)) times 20 % of its lifetime,
// the kubelet's nextRotationDeadline. Pure.
func RotationDeadline(notBefore, notAfter time.Time, jitter float64) time.Time {
	total := notAfter.Sub(notBefore)
	return notBefore.Add(total*7/10 + time.Duration(float64(total/5)*jitter))
}

// Run renews the certificate each time its deadline comes, until ctx is
// done (then it returns nil). A failed renewal is retried with back-off;
// the old certificate stays in use meanwhile. Blocking.
func (r *CertRotator) Run(ctx context.Context) error {
	c := r.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	jitter := r.Jitter
	if jitter == nil {
		jitter = rand.Float64
	}
	retry := certRetryInitial
	for {
		wait := retry
		cert, err := r.Current()
		if err != nil {
			r.Log.Warn("reading the node's client certificate", "err", err)
		} else {
			deadline := RotationDeadline(cert.NotBefore, cert.NotAfter, jitter())
			wait = deadline.Sub(c.Now())
			r.Log.Info("node client certificate rotation", "expires", cert.NotAfter, "renewal", deadline)
		}
		if wait > 0 && !sleep(ctx, c, wait) {
			return nil
		}
		if err == nil {
			if err = r.renew(ctx, c); err == nil {
				retry = certRetryInitial
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			r.Log.Warn("renewing the node's client certificate", "err", err, "retry", retry)
		}
		if !sleep(ctx, c, retry) {
			return nil
		}
		retry = min(2*retry, certRetryMax)
	}
}

// renew requests a new certificate and stores it.
func (r *CertRotator) renew(ctx context.Context, c clock.WithTicker) error {
	certPEM, keyPEM, err := RequestNodeCertificate(ctx, r.API, r.Node, c, r.Log)
	if err != nil {
		return err
	}
	if err := r.Store(certPEM, keyPEM); err != nil {
		return fmt.Errorf("storing the new client certificate: %w", err)
	}
	r.Log.Info("node client certificate renewed")
	return nil
}
