package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	certsv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// testSigner answers the PodCertificateRequests of its signer name, as
// upstream's hermetic e2e signer does: a SPIFFE leaf for the pod's service
// account signed by its CA (valid min(24h, maxExpirationSeconds), refresh
// 30 min before the end), or a denial when deny is set.
type testSigner struct {
	name  string
	deny  bool
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	caPEM string
}

func newTestSigner(t *testing.T, name string, deny bool) *testSigner {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &testSigner{name: name, deny: deny, ca: ca, caKey: key, caPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// run answers requests every 200 ms until ctx is done.
func (s *testSigner) run(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	for ctx.Err() == nil {
		l, err := cs.CertificatesV1().PodCertificateRequests("").List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=" + s.name})
		if err == nil {
			for i := range l.Items {
				if len(l.Items[i].Status.Conditions) == 0 {
					if err := s.answer(ctx, cs, &l.Items[i]); err != nil && ctx.Err() == nil {
						t.Logf("signer %s: %v", s.name, err)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *testSigner) answer(ctx context.Context, cs kubernetes.Interface, pcr *certsv1.PodCertificateRequest) error {
	now := time.Now()
	if s.deny {
		pcr.Status.Conditions = []metav1.Condition{{Type: certsv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue,
			Reason: "NotToday", Message: "this signer denies everything", LastTransitionTime: metav1.NewTime(now)}}
	} else {
		req, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
		if err != nil {
			return err
		}
		life := 24 * time.Hour
		if m := time.Duration(*pcr.Spec.MaxExpirationSeconds) * time.Second; m < life {
			life = m
		}
		notBefore := now.Add(-2 * time.Minute).Truncate(time.Second)
		notAfter := notBefore.Add(life)
		leaf := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), NotBefore: notBefore, NotAfter: notAfter,
			URIs:        []*url.URL{{Scheme: "spiffe", Host: "cluster.local", Path: "/ns/" + pcr.Namespace + "/sa/" + pcr.Spec.ServiceAccountName}},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
		der, err := x509.CreateCertificate(rand.Reader, leaf, s.ca, req.PublicKey, s.caKey)
		if err != nil {
			return err
		}
		pcr.Status.Conditions = []metav1.Condition{{Type: certsv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue,
			Reason: "Reason", Message: "Issued", LastTransitionTime: metav1.NewTime(now)}}
		pcr.Status.CertificateChain = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) + s.caPEM
		pcr.Status.NotBefore = &metav1.Time{Time: notBefore}
		pcr.Status.BeginRefreshAt = &metav1.Time{Time: notAfter.Add(-30 * time.Minute)}
		pcr.Status.NotAfter = &metav1.Time{Time: notAfter}
	}
	if _, err := cs.CertificatesV1().PodCertificateRequests(pcr.Namespace).UpdateStatus(ctx, pcr, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return nil
}

// TestPodCertificateVolume: an API pod's podCertificate source gets a key
// the agent generated and the chain the signer issued for the agent's
// PodCertificateRequest (leaf first, for the pod's service account, the
// requested lifetime); the pod starts only then. A denied request keeps
// the pod Pending with the kubelet's FailedMount message.
func TestPodCertificateVolume(t *testing.T) {
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx, cancel := context.WithCancel(context.Background())
	e.StartAgent(t, AgentOptions{Args: apiAgentArgs(c)})
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	waitNodeReady(t, cs)
	issuer, denier := newTestSigner(t, "skiff.test/issuer", false), newTestSigner(t, "skiff.test/denier", true)
	var wg sync.WaitGroup
	wg.Go(func() { issuer.run(ctx, t, cs) })
	wg.Go(func() { denier.run(ctx, t, cs) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	hour := int32(3600)
	certVol := func(signer string) v1.Volume {
		return v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{PodCertificate: &v1.PodCertificateProjection{SignerName: signer, KeyType: "ECDSAP256", MaxExpirationSeconds: &hour,
				CredentialBundlePath: "bundle.pem", KeyPath: "key.pem", CertificateChainPath: "chain.pem"}},
		}}}}
	}
	p := apiPod("certified", 1, "sleep 100000", certVol(issuer.name))
	p.Spec.AutomountServiceAccountToken = nil // a service account pod, as the API server's
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, cs, "certified", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	bundle := kubectl(t, c, "exec", "certified", "--", "cat", "/out/bundle.pem")
	key := kubectl(t, c, "exec", "certified", "--", "cat", "/out/key.pem")
	chain := kubectl(t, c, "exec", "certified", "--", "cat", "/out/chain.pem")
	if bundle != key+chain || !strings.HasPrefix(key, "-----BEGIN PRIVATE KEY-----") || !strings.HasSuffix(chain, issuer.caPEM) {
		t.Fatalf("bundle.pem is not key.pem then chain.pem ending with the CA:\n%s", bundle)
	}
	blk, _ := pem.Decode([]byte(chain))
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := pem.Decode([]byte(key))
	priv, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil || !bytes.Equal(mustMarshalPKIX(t, priv.(*ecdsa.PrivateKey).Public()), mustMarshalPKIX(t, leaf.PublicKey)) {
		t.Errorf("the leaf is not for the pod's key (%v)", err)
	}
	if len(leaf.URIs) != 1 || leaf.URIs[0].Path != "/ns/"+namespace+"/sa/default" || leaf.NotAfter.Sub(leaf.NotBefore) != time.Hour {
		t.Errorf("leaf URIs %v, life %v; want the default service account's, 1h", leaf.URIs, leaf.NotAfter.Sub(leaf.NotBefore))
	}

	d := apiPod("denied", 1, "sleep 100000", certVol(denier.name))
	d.Spec.AutomountServiceAccountToken = nil
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, cs, "denied", "FailedMount",
		`MountVolume.SetUp failed for volume "creds" : PodCertificateRequest was permanently denied: reason="NotToday" message="this signer denies everything"`)
	if got, err := cs.CoreV1().Pods(namespace).Get(ctx, "denied", metav1.GetOptions{}); err != nil || got.Status.Phase != v1.PodPending {
		t.Errorf("denied pod: %v, want Pending:\n%s", err, dump(got))
	}
}

func mustMarshalPKIX(t *testing.T, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
