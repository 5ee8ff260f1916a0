package apisource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	certsv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// PodCertAPI is the API server as the pod certificate manager uses it.
type PodCertAPI interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error)
	CreatePodCertificateRequest(ctx context.Context, pcr *certsv1.PodCertificateRequest) (*certsv1.PodCertificateRequest, error)
}

// The kubelet's pod certificate timings: a request not seen in the
// informer this long (plus up to podCertJitter) after it was created is
// made again; a refresh starts up to podCertJitter after the signer's
// beginRefreshAt; due refreshes are looked for every podCertCheckInterval.
const (
	pcrAbandonAfter      = 10 * time.Minute
	podCertJitter        = 5 * time.Minute
	podCertCheckInterval = time.Minute
	podCertAPITimeout    = 30 * time.Second
)

// errNotIssued is the kubelet's error while a source's first certificate
// is pending; the volume's set-up is retried.
var errNotIssued = errors.New("credential bundle is not issued yet")

// PodCertificates issues the credentials of projected podCertificate
// sources, as the kubelet's pod certificate manager does: for each source
// of each pod it generates a private key, creates a PodCertificateRequest
// for the source's signer (its stub PKCS#10 request signed with the key)
// and, once the signer issued it (seen through an informer on the node's
// requests, started at the first read), serves the key and chain; at the
// signer's beginRefreshAt it requests a new one and serves the old one
// until then. A denied or failed request is permanent for the pod. Keys
// live in memory only: after a restart every source is requested again.
// Changes is signalled when a request was answered or a refresh is due,
// so that the volume manager rewrites the files. Safe for concurrent use.
type PodCertificates struct {
	api      PodCertAPI
	informer *lazyInformer
	nodeName string
	// node is the registered Node (nil before), for its UID.
	node  func() *v1.Node
	clock clock.WithTicker
	log   *slog.Logger
	// jitter returns a random duration in [0, podCertJitter).
	jitter  func() time.Duration
	changes chan struct{}

	mu    sync.Mutex
	creds map[credKey]*podCred
}

// credKey names one podCertificate source: its pod, volume and index in
// the volume's sources.
type credKey struct {
	pod    types.UID
	volume string
	source int
}

// podCred is one source's state.
type podCred struct {
	// key (PEM) and chain are the issued credentials; nil before.
	key, chain               []byte
	beginRefreshAt, notAfter time.Time
	// pcr is the outstanding request's namespace/name ("" none), made
	// with pendingKey; abandonAt is when it is made again if unseen.
	pcr        string
	pendingKey []byte
	abandonAt  time.Time
	// err is the permanent error of a denied or failed request.
	err error
}

// NewPodCertificates returns a manager requesting through api and
// watching inf (apiclient's PodCertificateRequestInformer of nodeName).
func NewPodCertificates(api PodCertAPI, inf cache.SharedIndexInformer, nodeName string, node func() *v1.Node, c clock.WithTicker, log *slog.Logger) (*PodCertificates, error) {
	if c == nil {
		c = clock.RealClock{}
	}
	m := &PodCertificates{
		api: api, informer: newLazyInformer(inf, "PodCertificateRequest"), nodeName: nodeName, node: node, clock: c, log: log,
		jitter:  func() time.Duration { return rand.N(podCertJitter) },
		changes: make(chan struct{}, 1), creds: map[credKey]*podCred{},
	}
	answered := func(o any) {
		if pcr, ok := o.(*certsv1.PodCertificateRequest); ok && len(pcr.Status.Conditions) > 0 {
			m.signal()
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: answered, UpdateFunc: func(_, o any) { answered(o) },
	})
	if err != nil {
		return nil, fmt.Errorf("PodCertificateRequest informer: %w", err)
	}
	return m, nil
}

func (m *PodCertificates) signal() {
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// Changes is signalled (coalesced) when a request was answered or a
// refresh is due.
func (m *PodCertificates) Changes() <-chan struct{} { return m.changes }

// Run runs the informer from the first read, and looks for due refreshes
// every minute, until ctx is done. Blocking.
func (m *PodCertificates) Run(ctx context.Context) {
	if !m.informer.waitStart(ctx) {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.informer.RunWithContext(ctx) })
	defer wg.Wait()
	t := m.clock.NewTicker(podCertCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if m.refreshDue(m.clock.Now()) {
			m.signal()
		}
	}
}

// refreshDue reports whether an issued credential without an outstanding
// request reached its refresh time, or an outstanding request its abandon
// time (the controller manager deletes unanswered requests): the next
// read makes a new one.
func (m *PodCertificates) refreshDue(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.creds {
		switch {
		case c.err != nil:
		case c.pcr != "" && now.After(c.abandonAt):
			return true
		case c.key != nil && c.pcr == "" && !now.Before(c.beginRefreshAt):
			return true
		}
	}
	return false
}

// SetPods forgets the sources of pods not in pods (the API pods of the
// node). It does not block.
func (m *PodCertificates) SetPods(pods []*v1.Pod) {
	keep := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		keep[p.UID] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.creds {
		if !keep[k.pod] {
			delete(m.creds, k)
		}
	}
}

// Bundle returns the private key (PEM, PKCS#8) and certificate chain (PEM,
// the signer's order) of source index of pod's volume, making a request
// when there is none or a refresh is due. Until the first issuance it
// returns the kubelet's "not issued yet" error; a denied or failed
// request's error is returned from then on. Blocks on API calls.
func (m *PodCertificates) Bundle(pod *v1.Pod, volume string, index int, src *v1.PodCertificateProjection) (key, chain []byte, err error) {
	if err := m.informer.synced(); err != nil {
		return nil, nil, err
	}
	k := credKey{pod.UID, volume, index}
	now := m.clock.Now()
	m.mu.Lock()
	c := m.creds[k]
	if c == nil {
		c = &podCred{}
		m.creds[k] = c
	}
	m.observe(c, now)
	need := c.err == nil && c.pcr == "" && (c.key == nil || !now.Before(c.beginRefreshAt))
	m.mu.Unlock()
	if need {
		keyPEM, name, err := m.request(pod, src)
		m.mu.Lock()
		if err == nil {
			c.pcr, c.pendingKey, c.abandonAt = name, keyPEM, now.Add(pcrAbandonAfter+m.jitter())
		}
		m.mu.Unlock()
		if err != nil {
			if c.key == nil {
				return nil, nil, err
			}
			m.log.Warn("refreshing a pod certificate", "pod", pod.Namespace+"/"+pod.Name, "volume", volume, "err", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case c.err != nil:
		return nil, nil, c.err
	case c.key == nil:
		return nil, nil, errNotIssued
	}
	return c.key, c.chain, nil
}

// observe moves c by the answer to its outstanding request, as the
// kubelet's state machine: Issued makes the pending key and the chain
// current; Denied and Failed are permanent and drop the current
// credentials; a request still unseen at its abandon time is forgotten
// (the next read makes a new one). Called with m.mu held.
func (m *PodCertificates) observe(c *podCred, now time.Time) {
	if c.pcr == "" {
		return
	}
	o, ok, _ := m.informer.GetStore().GetByKey(c.pcr)
	pcr, _ := o.(*certsv1.PodCertificateRequest)
	if !ok || pcr == nil {
		if now.After(c.abandonAt) {
			c.pcr, c.pendingKey = "", nil
		}
		return
	}
	for _, cond := range pcr.Status.Conditions {
		switch cond.Type {
		case certsv1.PodCertificateRequestConditionTypeIssued:
			c.key, c.chain = c.pendingKey, cleanChain([]byte(pcr.Status.CertificateChain))
			c.beginRefreshAt, c.notAfter = timeOf(pcr.Status.BeginRefreshAt).Add(m.jitter()), timeOf(pcr.Status.NotAfter)
		case certsv1.PodCertificateRequestConditionTypeDenied:
			c.key, c.chain = nil, nil
			c.err = fmt.Errorf("PodCertificateRequest was permanently denied: reason=%q message=%q", cond.Reason, cond.Message)
		case certsv1.PodCertificateRequestConditionTypeFailed:
			c.key, c.chain = nil, nil
			c.err = fmt.Errorf("PodCertificateRequest was permanently failed: reason=%q message=%q", cond.Reason, cond.Message)
		default:
			continue
		}
		c.pcr, c.pendingKey = "", nil
		return
	}
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// request generates a key for src and creates the PodCertificateRequest
// the kubelet would: in the pod's namespace, owned by the pod, naming the
// pod, its service account and this node by name and UID. It returns the
// key's PEM and the request's namespace/name.
func (m *PodCertificates) request(pod *v1.Pod, src *v1.PodCertificateProjection) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), podCertAPITimeout)
	defer cancel()
	sa, err := m.api.GetServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return nil, "", fmt.Errorf("while fetching service account: %w", err)
	}
	node := m.node()
	if node == nil {
		return nil, "", fmt.Errorf("while getting node object: node %q is not registered yet", m.nodeName)
	}
	keyPEM, stub, err := newKeyAndStub(src.KeyType)
	if err != nil {
		return nil, "", fmt.Errorf("while generating keys: %w", err)
	}
	pcr := &certsv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, GenerateName: "req-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}},
		Spec: certsv1.PodCertificateRequestSpec{
			SignerName: src.SignerName, PodName: pod.Name, PodUID: pod.UID,
			ServiceAccountName: pod.Spec.ServiceAccountName, ServiceAccountUID: sa.UID,
			NodeName: types.NodeName(m.nodeName), NodeUID: node.UID,
			MaxExpirationSeconds: src.MaxExpirationSeconds, StubPKCS10Request: stub,
			UnverifiedUserAnnotations: src.UserAnnotations,
		},
	}
	out, err := m.api.CreatePodCertificateRequest(ctx, pcr)
	if err != nil {
		return nil, "", fmt.Errorf("while creating PodCertificateRequest: %w", err)
	}
	return keyPEM, out.Namespace + "/" + out.Name, nil
}
