package apisource

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	certsv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakePodCertAPI records the requests it creates and names them req-N.
type fakePodCertAPI struct {
	mu      sync.Mutex
	created []*certsv1.PodCertificateRequest
}

func (f *fakePodCertAPI) GetServiceAccount(_ context.Context, ns, name string) (*v1.ServiceAccount, error) {
	return &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "sa-uid"}}, nil
}

func (f *fakePodCertAPI) CreatePodCertificateRequest(_ context.Context, pcr *certsv1.PodCertificateRequest) (*certsv1.PodCertificateRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := pcr.DeepCopy()
	out.Name = fmt.Sprintf("%s%d", pcr.GenerateName, len(f.created)+1)
	f.created = append(f.created, out)
	return out, nil
}

func (f *fakePodCertAPI) last() *certsv1.PodCertificateRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.created[len(f.created)-1].DeepCopy()
}

// podCertsUnderTest runs a manager over an informer fed by the returned
// fake watch.
func podCertsUnderTest(t *testing.T) (*PodCertificates, *fakePodCertAPI, *watch.FakeWatcher, *clocktesting.FakeClock) {
	t.Helper()
	w := watch.NewFakeWithChanSize(10, false)
	inf := watchedInformer(w, &certsv1.PodCertificateRequestList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, &certsv1.PodCertificateRequest{})
	api := &fakePodCertAPI{}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC))
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "node-uid"}}
	m, err := NewPodCertificates(api, inf, "node1", func() *v1.Node { return node }, clk, discard)
	if err != nil {
		t.Fatal(err)
	}
	m.jitter = func() time.Duration { return 0 }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return m, api, w, clk
}

// answer puts pcr, with the condition typ (and for Issued a chain and
// times), into the informer, and waits until the manager signals it.
func answer(t *testing.T, m *PodCertificates, w *watch.FakeWatcher, pcr *certsv1.PodCertificateRequest, typ string, now time.Time, rv string) {
	t.Helper()
	pcr.ResourceVersion = rv
	pcr.Status.Conditions = []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, Reason: "Because", Message: "the test says so"}}
	if typ == certsv1.PodCertificateRequestConditionTypeIssued {
		pcr.Status.CertificateChain = "junk\n-----BEGIN CERTIFICATE-----\nTEVBRg==\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n"
		pcr.Status.BeginRefreshAt = &metav1.Time{Time: now.Add(30 * time.Minute)}
		pcr.Status.NotAfter = &metav1.Time{Time: now.Add(time.Hour)}
	}
	w.Add(pcr)
	select {
	case <-m.Changes():
	case <-time.After(5 * time.Second):
		t.Fatalf("no change signalled for %s %s", pcr.Name, typ)
	}
	// The signal may have been a due refresh's: wait for the informer.
	deadline := time.Now().Add(5 * time.Second)
	for {
		o, ok, _ := m.informer.GetStore().GetByKey(pcr.Namespace + "/" + pcr.Name)
		if ok && o.(*certsv1.PodCertificateRequest).ResourceVersion == rv {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s never reached the informer", pcr.Name, typ)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPodCertificates: the first read requests a certificate as the
// kubelet does and is "not issued yet" until the signer answers; then
// the key and the cleaned chain are served; at beginRefreshAt a new
// request is made while the old credentials are served; a denial is
// permanent and drops them; the pod's removal forgets its sources.
func TestPodCertificates(t *testing.T) {
	m, api, w, clk := podCertsUnderTest(t)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
	exp := int32(3600)
	src := &v1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ECDSAP256", MaxExpirationSeconds: &exp,
		UserAnnotations: map[string]string{"example.com/a": "b"}}

	if _, _, err := m.Bundle(pod, "creds", 1, src); err == nil || err.Error() != "credential bundle is not issued yet" {
		t.Fatalf("first read: %v, want not issued yet", err)
	}
	req := api.last()
	s := req.Spec
	if req.Namespace != "ns" || req.GenerateName != "req-" || len(req.OwnerReferences) != 1 || req.OwnerReferences[0].UID != "pod-uid" ||
		s.SignerName != "example.com/s" || s.PodName != "p" || s.PodUID != "pod-uid" || s.ServiceAccountName != "sa" ||
		s.ServiceAccountUID != "sa-uid" || s.NodeName != "node1" || s.NodeUID != "node-uid" || *s.MaxExpirationSeconds != 3600 ||
		s.UnverifiedUserAnnotations["example.com/a"] != "b" {
		t.Fatalf("request %+v", req)
	}
	csr, err := x509.ParseCertificateRequest(s.StubPKCS10Request)
	if err != nil || csr.CheckSignature() != nil {
		t.Fatalf("stub request: %v", err)
	}
	if _, _, err := m.Bundle(pod, "creds", 1, src); err == nil || len(api.created) != 1 {
		t.Fatalf("second read before the answer: %v, %d requests; want not issued and no new request", err, len(api.created))
	}

	now := clk.Now()
	answer(t, m, w, req, certsv1.PodCertificateRequestConditionTypeIssued, now, "2")
	key, chain, err := m.Bundle(pod, "creds", 1, src)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(key)
	priv, perr := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if blk.Type != "PRIVATE KEY" || perr != nil || !priv.(*ecdsa.PrivateKey).PublicKey.Equal(csr.PublicKey) {
		t.Errorf("key %q (%v) is not the requested one", blk.Type, perr)
	}
	wantChain := "-----BEGIN CERTIFICATE-----\nTEVBRg==\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n"
	if string(chain) != wantChain {
		t.Errorf("chain %q, want the two blocks only", chain)
	}

	// The refresh: due at beginRefreshAt, served old until answered.
	if m.refreshDue(clk.Now()) {
		t.Error("refresh due before beginRefreshAt")
	}
	clk.Step(31 * time.Minute)
	if !m.refreshDue(clk.Now()) {
		t.Error("no refresh due after beginRefreshAt")
	}
	if k2, _, err := m.Bundle(pod, "creds", 1, src); err != nil || string(k2) != string(key) || len(api.created) != 2 {
		t.Fatalf("during the refresh: %v, %d requests; want the old key and a second request", err, len(api.created))
	}
	answer(t, m, w, api.last(), certsv1.PodCertificateRequestConditionTypeDenied, clk.Now(), "3")
	_, _, err = m.Bundle(pod, "creds", 1, src)
	if err == nil || !strings.Contains(err.Error(), `PodCertificateRequest was permanently denied: reason="Because" message="the test says so"`) {
		t.Fatalf("after the denial: %v", err)
	}
	clk.Step(time.Hour)
	if _, _, err := m.Bundle(pod, "creds", 1, src); err == nil || len(api.created) != 2 {
		t.Errorf("a denial must be permanent: %v, %d requests", err, len(api.created))
	}

	m.SetPods(nil)
	if _, _, err := m.Bundle(pod, "creds", 1, src); err == nil || err.Error() != "credential bundle is not issued yet" || len(api.created) != 3 {
		t.Errorf("after the pod was forgotten: %v, %d requests; want a new request", err, len(api.created))
	}
}

// TestPodCertificatesAbandon: a request the informer never shows is made
// again once its abandon time passed.
func TestPodCertificatesAbandon(t *testing.T) {
	m, api, _, clk := podCertsUnderTest(t)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"}, Spec: v1.PodSpec{ServiceAccountName: "default"}}
	src := &v1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519"}
	_, _, _ = m.Bundle(pod, "creds", 0, src)
	clk.Step(pcrAbandonAfter - time.Second)
	_, _, _ = m.Bundle(pod, "creds", 0, src)
	if len(api.created) != 1 {
		t.Fatalf("%d requests before the abandon time, want 1", len(api.created))
	}
	if m.refreshDue(clk.Now()) {
		t.Error("a refresh is due before the abandon time")
	}
	clk.Step(2 * time.Second)
	// The minute's check signals it, so that a volume refresh asks again.
	if !m.refreshDue(clk.Now()) {
		t.Error("no refresh due after the abandon time")
	}
	_, _, _ = m.Bundle(pod, "creds", 0, src)
	if len(api.created) != 2 {
		t.Errorf("%d requests after the abandon time, want 2", len(api.created))
	}
}

// TestLazyInformerWaitsOnce: the first read starts the informer and waits
// for its listing (bounded); later reads of an informer that has not
// listed fail at once with the kubelet's error.
func TestLazyInformerWaitsOnce(t *testing.T) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			<-ctx.Done() // never lists
			return nil, ctx.Err()
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	l := newLazyInformer(cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), &certsv1.PodCertificateRequest{}, 0, cache.Indexers{}), "PodCertificateRequest")
	l.syncWait = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if l.waitStart(ctx) {
			l.RunWithContext(ctx)
		}
	}()
	defer func() { cancel(); <-done }()
	start := time.Now()
	if err := l.synced(); err == nil || err.Error() != "PodCertificateRequest informer has not yet synced" {
		t.Fatalf("first read: %v", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("the first read returned after %v, before the wait", d)
	}
	l.syncWait = time.Hour // a second wait would hang the test
	if err := l.synced(); err == nil {
		t.Fatal("second read: no error")
	}
}

// TestNewKeyAndStub: every key type of the API gives a PKCS#8 key whose
// stub request verifies; others are refused.
func TestNewKeyAndStub(t *testing.T) {
	for _, kt := range []string{"RSA3072", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"} {
		keyPEM, stub, err := newKeyAndStub(kt)
		if err != nil {
			t.Fatalf("%s: %v", kt, err)
		}
		blk, _ := pem.Decode(keyPEM)
		if _, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err != nil || blk.Type != "PRIVATE KEY" {
			t.Errorf("%s: key %q: %v", kt, blk.Type, err)
		}
		csr, err := x509.ParseCertificateRequest(stub)
		if err != nil || csr.CheckSignature() != nil {
			t.Errorf("%s: stub request: %v", kt, err)
		}
	}
	if _, _, err := newKeyAndStub("DSA"); err == nil {
		t.Error("DSA accepted")
	}
}
