package apisource

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"sync"
	"testing"
	"time"

	certsv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeCSRs issues "CERT" on the third read of a created CSR.
type fakeCSRs struct {
	mu      sync.Mutex
	created *certsv1.CertificateSigningRequest
	reads   int
	deny    bool
}

func (f *fakeCSRs) CreateCSR(_ context.Context, csr *certsv1.CertificateSigningRequest) (*certsv1.CertificateSigningRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = csr.DeepCopy()
	f.created.Name = "csr-abc"
	return f.created.DeepCopy(), nil
}

func (f *fakeCSRs) GetCSR(_ context.Context, name string) (*certsv1.CertificateSigningRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	out := f.created.DeepCopy()
	switch {
	case f.deny:
		out.Status.Conditions = []certsv1.CertificateSigningRequestCondition{{Type: certsv1.CertificateDenied, Status: v1.ConditionTrue, Reason: "Nope"}}
	case f.reads >= 3:
		out.Status.Conditions = []certsv1.CertificateSigningRequestCondition{{Type: certsv1.CertificateApproved, Status: v1.ConditionTrue}}
		out.Status.Certificate = []byte("CERT")
	}
	return out, nil
}

// TestRequestNodeCertificate_H1: the TLS bootstrap asks the kubelet
// signer for system:node:<node> in system:nodes (client auth) and waits
// for the certificate; a denial is an error naming the CSR.
func TestRequestNodeCertificate_H1(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	api := &fakeCSRs{}
	done := make(chan struct{})
	var cert, key []byte
	var err error
	go func() {
		defer close(done)
		cert, key, err = RequestNodeCertificate(context.Background(), api, "n1", clk, discard)
	}()
	for {
		select {
		case <-done:
		default:
			if clk.HasWaiters() {
				clk.Step(csrPollInterval)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		break
	}
	if err != nil || string(cert) != "CERT" || !strings.Contains(string(key), "EC PRIVATE KEY") {
		t.Fatalf("cert %q key %q err %v", cert, key, err)
	}
	spec := api.created.Spec
	if spec.SignerName != certsv1.KubeAPIServerClientKubeletSignerName || len(spec.Usages) != 2 || spec.Usages[1] != certsv1.UsageClientAuth {
		t.Errorf("spec %+v", spec)
	}
	b, _ := pem.Decode(spec.Request)
	req, perr := x509.ParseCertificateRequest(b.Bytes)
	if perr != nil || req.Subject.CommonName != "system:node:n1" || len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != "system:nodes" {
		t.Errorf("request subject %+v (%v)", req, perr)
	}

	denied := &fakeCSRs{deny: true, created: &certsv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-x"}}}
	if _, _, err := RequestNodeCertificate(context.Background(), denied, "n1", clk, discard); err == nil || !strings.Contains(err.Error(), "Denied") {
		t.Errorf("denied: %v", err)
	}
}
