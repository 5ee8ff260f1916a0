package apisource

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"time"

	certsv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// CSRAPI is the API server as the TLS bootstrap uses it.
type CSRAPI interface {
	CreateCSR(ctx context.Context, csr *certsv1.CertificateSigningRequest) (*certsv1.CertificateSigningRequest, error)
	GetCSR(ctx context.Context, name string) (*certsv1.CertificateSigningRequest, error)
}

// csrPollInterval is how often a pending CSR is read again.
const csrPollInterval = time.Second

// RequestNodeCertificate is the kubelet's TLS bootstrap (--bootstrap-
// kubeconfig): with the bootstrap credentials of api it makes a new
// ECDSA P-256 key, asks the kubernetes.io/kube-apiserver-client-kubelet
// signer for a client certificate of system:node:<node> in system:nodes
// (a CertificateSigningRequest, which the controller manager approves for
// bootstrap tokens allowed to), and waits until the certificate is issued.
// It returns the certificate and the key, PEM-encoded. Blocking until
// then, a denial or failure, or ctx's end.
func RequestNodeCertificate(ctx context.Context, api CSRAPI, node string, c clock.WithTicker, log *slog.Logger) (certPEM, keyPEM []byte, err error) {
	if c == nil {
		c = clock.RealClock{}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: certificate request: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: key: %w", err)
	}
	csr := &certsv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certsv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certsv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certsv1.KeyUsage{certsv1.UsageDigitalSignature, certsv1.UsageClientAuth},
		},
	}
	created, err := api.CreateCSR(ctx, csr)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: creating the certificate signing request: %w", err)
	}
	log.Info("waiting for the node's client certificate", "csr", created.Name)
	cert, err := waitForCertificate(ctx, api, created.Name, c)
	if err != nil {
		return nil, nil, err
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// waitForCertificate polls the CSR name until it carries a certificate.
func waitForCertificate(ctx context.Context, api CSRAPI, name string, c clock.WithTicker) ([]byte, error) {
	for {
		got, err := api.GetCSR(ctx, name)
		if err == nil {
			if cert, done, err := csrOutcome(got); done {
				return cert, err
			}
		}
		if !sleep(ctx, c, csrPollInterval) {
			return nil, fmt.Errorf("bootstrap: waiting for csr %s: %w", name, ctx.Err())
		}
	}
}

// csrOutcome reads a CSR: its certificate once issued, an error once
// denied or failed, not done otherwise. Pure.
func csrOutcome(csr *certsv1.CertificateSigningRequest) (cert []byte, done bool, err error) {
	for _, c := range csr.Status.Conditions {
		if (c.Type == certsv1.CertificateDenied || c.Type == certsv1.CertificateFailed) && c.Status == v1.ConditionTrue {
			return nil, true, fmt.Errorf("bootstrap: csr %s %s: %s %s", csr.Name, c.Type, c.Reason, c.Message)
		}
	}
	if len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, true, nil
	}
	return nil, false, nil
}
