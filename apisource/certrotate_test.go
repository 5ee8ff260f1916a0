package apisource

import (
	"context"
	"crypto/x509"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestRotationDeadline_H1: the renewal falls between 70 % and 90 % of
// the certificate's lifetime, as in the kubelet's certificate manager.
func TestRotationDeadline_H1(t *testing.T) {
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	na := nb.Add(100 * time.Hour)
	for _, tt := range []struct {
		jitter float64
		want   time.Duration
	}{{0, 70 * time.Hour}, {0.5, 80 * time.Hour}, {0.99, 89*time.Hour + 48*time.Minute}} {
		if got := RotationDeadline(nb, na, tt.jitter).Sub(nb); got != tt.want {
			t.Errorf("jitter %v: %v after notBefore, want %v", tt.jitter, got, tt.want)
		}
	}
}

// TestCertRotator_H1: the rotator waits for the deadline, renews through
// a CSR and stores the new pair, then waits for the new certificate's
// deadline; a failed renewal keeps the old certificate and is retried.
func TestCertRotator_H1(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	api := &fakeCSRs{deny: true}
	var mu sync.Mutex
	current := &x509.Certificate{NotBefore: t0, NotAfter: t0.Add(100 * time.Hour)}
	var stored [][]byte
	r := &CertRotator{
		API: api, Node: "n1", Clock: clk, Log: discard,
		Jitter: func() float64 { return 0.5 },
		Current: func() (*x509.Certificate, error) {
			mu.Lock()
			defer mu.Unlock()
			return current, nil
		},
		Store: func(certPEM, _ []byte) error {
			mu.Lock()
			defer mu.Unlock()
			stored = append(stored, certPEM)
			now := clk.Now()
			current = &x509.Certificate{NotBefore: now, NotAfter: now.Add(100 * time.Hour)}
			return nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	storedN := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(stored)
	}
	// advance steps the clock to t0+d through every timer on the way.
	advance := func(d time.Duration) {
		t.Helper()
		for clk.Now().Before(t0.Add(d)) {
			deadline := time.Now().Add(5 * time.Second)
			for !clk.HasWaiters() {
				if time.Now().After(deadline) {
					t.Fatalf("rotator not waiting at %v", clk.Now())
				}
				time.Sleep(time.Millisecond)
			}
			clk.Step(min(time.Second, t0.Add(d).Sub(clk.Now())))
		}
	}
	advance(80*time.Hour - time.Second)
	if api.created != nil {
		t.Fatal("a CSR before 80 % of the lifetime")
	}
	advance(80*time.Hour + 10*time.Second) // the deadline, a denied CSR, retries
	api.mu.Lock()
	created := api.created != nil
	api.deny = false
	api.mu.Unlock()
	if !created || storedN() != 0 {
		t.Fatalf("at the deadline: CSR %t, stored %d; want a CSR, denied, nothing stored", created, storedN())
	}
	advance(80*time.Hour + 5*time.Minute) // a retry succeeds
	if storedN() != 1 || string(stored[0]) != "CERT" {
		t.Fatalf("stored %q, want one CERT", stored)
	}
	mu.Lock()
	renewedAt := current.NotBefore
	mu.Unlock()
	advance(renewedAt.Sub(t0) + 79*time.Hour)
	if storedN() != 1 {
		t.Fatalf("renewed again before the new certificate's deadline")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}
