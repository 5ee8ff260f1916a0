package apisource

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	certsv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// maxLabelSelectorLength is the kubelet's bound on a projected source's
// label selector (in its string form).
const maxLabelSelectorLength = 100 * 1024

// TrustBundles gives projected clusterTrustBundle sources their trust
// anchors (volumes.TrustBundleSource), as the kubelet's ClusterTrustBundle
// manager does: from an informer on every ClusterTrustBundle, started at
// the first read (most nodes never mount one), normalized (PEM headers
// and comments dropped, certificates deduplicated). Changes is signalled
// on every informer event, so that the volume manager rewrites the
// files. Create with NewTrustBundles and Run it. Safe for concurrent use.
type TrustBundles struct {
	informer *lazyInformer
	// seed orders the anchors of a file: the same order in this process
	// (a refresh rewrites nothing unchanged), another after a restart, as
	// the kubelet's shuffle.
	seed    [32]byte
	changes chan struct{}
}

// NewTrustBundles returns the trust anchors of inf's ClusterTrustBundles
// (apiclient's ClusterTrustBundleInformer).
func NewTrustBundles(inf cache.SharedIndexInformer) (*TrustBundles, error) {
	t := &TrustBundles{informer: newLazyInformer(inf, "ClusterTrustBundle"), changes: make(chan struct{}, 1)}
	_, _ = rand.Read(t.seed[:])
	signal := func() {
		select {
		case t.changes <- struct{}{}:
		default:
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { signal() }, UpdateFunc: func(any, any) { signal() }, DeleteFunc: func(any) { signal() },
	})
	if err != nil {
		return nil, fmt.Errorf("ClusterTrustBundle informer: %w", err)
	}
	return t, nil
}

// Run runs the informer from the first read until ctx is done. Blocking.
func (t *TrustBundles) Run(ctx context.Context) {
	if t.informer.waitStart(ctx) {
		t.informer.RunWithContext(ctx)
	}
}

// Changes is signalled (coalesced) when a ClusterTrustBundle was added,
// changed or deleted.
func (t *TrustBundles) Changes() <-chan struct{} { return t.changes }

// ByName returns the anchors of the ClusterTrustBundle name; a missing
// one gives none if allowMissing, else an error. Blocks only for the
// first listing.
func (t *TrustBundles) ByName(name string, allowMissing bool) ([]byte, error) {
	if err := t.informer.synced(); err != nil {
		return nil, err
	}
	o, ok, err := t.informer.GetStore().GetByKey(name)
	if err != nil {
		return nil, fmt.Errorf("while getting ClusterTrustBundle: %w", err)
	}
	ctb, _ := o.(*certsv1.ClusterTrustBundle)
	if !ok || ctb == nil {
		if allowMissing {
			return []byte{}, nil
		}
		return nil, fmt.Errorf("while getting ClusterTrustBundle: %w", apierrors.NewNotFound(certsv1.Resource("clustertrustbundles"), name))
	}
	return t.normalize([]*certsv1.ClusterTrustBundle{ctb}), nil
}

// BySigner returns the anchors of every ClusterTrustBundle of signerName
// whose labels match sel (nil: none match; empty: all do); none matching
// gives none if allowMissing, else an error. Blocks only for the first
// listing.
func (t *TrustBundles) BySigner(signerName string, sel *metav1.LabelSelector, allowMissing bool) ([]byte, error) {
	if err := t.informer.synced(); err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("while parsing label selector: %w", err)
	}
	if n := len(selector.String()); n > maxLabelSelectorLength {
		return nil, fmt.Errorf("label selector length (%d) is larger than %d", n, maxLabelSelectorLength)
	}
	var match []*certsv1.ClusterTrustBundle
	for _, o := range t.informer.GetStore().List() {
		if ctb, ok := o.(*certsv1.ClusterTrustBundle); ok && ctb.Spec.SignerName == signerName && selector.Matches(labels.Set(ctb.Labels)) {
			match = append(match, ctb)
		}
	}
	if len(match) == 0 {
		if allowMissing {
			return []byte{}, nil
		}
		return nil, errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
	}
	return t.normalize(match), nil
}

// normalize is the kubelet's normalizeTrustAnchors: every PEM block of
// the bundles, deduplicated, re-encoded as a bare CERTIFICATE block, in
// this process's order.
func (t *TrustBundles) normalize(ctbs []*certsv1.ClusterTrustBundle) []byte {
	type anchor struct {
		der []byte
		key [32]byte
	}
	seen := map[string]bool{}
	var anchors []anchor
	for _, ctb := range ctbs {
		rest := []byte(ctb.Spec.TrustBundle)
		for {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if seen[string(b.Bytes)] {
				continue
			}
			seen[string(b.Bytes)] = true
			anchors = append(anchors, anchor{der: b.Bytes, key: sha256.Sum256(append(t.seed[:], b.Bytes...))})
		}
	}
	slices.SortFunc(anchors, func(a, b anchor) int { return bytes.Compare(a.key[:], b.key[:]) })
	out := []byte{}
	for _, a := range anchors {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.der})...)
	}
	return out
}
