package apisource

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	certsv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// caPEM is a self-signed CA certificate named cn, PEM-encoded with a
// header, as a bundle may carry one.
func caPEM(t *testing.T, cn string) (withHeader string, bare string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"x": "y"}, Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func ctb(name, signer, bundle string, lbls map[string]string) certsv1.ClusterTrustBundle {
	return certsv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, ResourceVersion: "1"},
		Spec: certsv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: bundle}}
}

// startedTrustBundles returns TrustBundles over a fake informer listing
// items, and whether the informer was listed (started).
func startedTrustBundles(t *testing.T, items ...certsv1.ClusterTrustBundle) (*TrustBundles, func() bool) {
	t.Helper()
	listed := make(chan struct{}, 1)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			select {
			case listed <- struct{}{}:
			default:
			}
			return &certsv1.ClusterTrustBundleList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: items}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), &certsv1.ClusterTrustBundle{}, 0, cache.Indexers{})
	tb, err := NewTrustBundles(inf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tb.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return tb, func() bool { return len(listed) > 0 }
}

// TestTrustBundlesLazyStart: the ClusterTrustBundles are not listed until
// a volume reads one (most nodes never do); the first read waits for the
// listing.
func TestTrustBundlesLazyStart(t *testing.T) {
	with, bare := caPEM(t, "a")
	tb, listed := startedTrustBundles(t, ctb("a", "", with, nil))
	time.Sleep(50 * time.Millisecond) // a listing would have happened by now
	if listed() {
		t.Fatal("listed before the first read")
	}
	got, err := tb.ByName("a", false)
	if err != nil || string(got) != bare {
		t.Fatalf("ByName(a) = %q, %v; want %q", got, err, bare)
	}
	select {
	case <-tb.Changes():
	default:
		t.Error("no change signalled for the listed bundle")
	}
}

// TestTrustBundles: by name and by signer plus label selector, with the
// kubelet's results for missing bundles, nil and empty selectors, and its
// normalization (headers dropped, duplicates once, one order per process).
func TestTrustBundles(t *testing.T) {
	a, aBare := caPEM(t, "a")
	b, bBare := caPEM(t, "b")
	c, cBare := caPEM(t, "c")
	tb, _ := startedTrustBundles(t,
		ctb("plain", "", a+b+a, map[string]string{"alive": "true"}),
		ctb("s:1", "example.com/s", a, map[string]string{"alive": "true"}),
		ctb("s:2", "example.com/s", b+c, map[string]string{"alive": "false"}),
		ctb("t:1", "example.com/t", c, map[string]string{"alive": "true"}),
	)
	sel := func(m map[string]string) *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: m} }
	for _, tc := range []struct {
		name    string
		read    func() ([]byte, error)
		want    []string // the anchors, any order
		wantErr string
	}{
		{"by name, duplicates once", func() ([]byte, error) { return tb.ByName("plain", false) }, []string{aBare, bBare}, ""},
		{"missing name", func() ([]byte, error) { return tb.ByName("nope", false) }, nil, `while getting ClusterTrustBundle: clustertrustbundles.certificates.k8s.io "nope" not found`},
		{"missing name, optional", func() ([]byte, error) { return tb.ByName("nope", true) }, []string{}, ""},
		{"signer and labels", func() ([]byte, error) {
			return tb.BySigner("example.com/s", sel(map[string]string{"alive": "true"}), false)
		}, []string{aBare}, ""},
		{"empty selector: all of the signer's", func() ([]byte, error) { return tb.BySigner("example.com/s", &metav1.LabelSelector{}, false) }, []string{aBare, bBare, cBare}, ""},
		{"nil selector matches nothing", func() ([]byte, error) { return tb.BySigner("example.com/s", nil, false) }, nil, "combination of signerName and labelSelector matched zero ClusterTrustBundles"},
		{"nil selector, optional", func() ([]byte, error) { return tb.BySigner("example.com/s", nil, true) }, []string{}, ""},
		{"bad selector", func() ([]byte, error) {
			return tb.BySigner("example.com/s", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bad"}}}, true)
		}, nil, "while parsing label selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.read()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var blocks []string
			for rest := got; ; {
				var blk *pem.Block
				if blk, rest = pem.Decode(rest); blk == nil {
					break
				}
				blocks = append(blocks, string(pem.EncodeToMemory(blk)))
			}
			if len(blocks) != len(tc.want) || strings.Join(blocks, "") != string(got) {
				t.Fatalf("got %d blocks (%q), want %d bare blocks", len(blocks), got, len(tc.want))
			}
			for _, w := range tc.want {
				if !slices.Contains(blocks, w) {
					t.Errorf("anchor missing: %q", w)
				}
			}
			again, _ := tc.read()
			if string(again) != string(got) {
				t.Error("the order changed between two reads")
			}
		})
	}
}
