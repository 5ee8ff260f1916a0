package volumes

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeTrustBundles answers by name from names, by signer from signers
// (keyed by signer and the selector's matchLabels "alive" value, "" for a
// nil selector), honouring allowMissing.
type fakeTrustBundles struct{ names, signers map[string]string }

func (f fakeTrustBundles) ByName(name string, allowMissing bool) ([]byte, error) {
	if d, ok := f.names[name]; ok {
		return []byte(d), nil
	}
	if allowMissing {
		return []byte{}, nil
	}
	return nil, errors.New("while getting ClusterTrustBundle: not found")
}

func (f fakeTrustBundles) BySigner(signer string, sel *metav1.LabelSelector, allowMissing bool) ([]byte, error) {
	key := signer + "/"
	if sel != nil {
		key += sel.MatchLabels["alive"]
	}
	if d, ok := f.signers[key]; ok {
		return []byte(d), nil
	}
	if allowMissing {
		return []byte{}, nil
	}
	return nil, errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
}

// TestProjectedClusterTrustBundle: a projected clusterTrustBundle source
// becomes one file of the bundle's anchors with the volume's mode, by
// name or by signer and selector; optional ones may be empty; without an
// API server (static pods) it fails with the kubelet's message.
func TestProjectedClusterTrustBundle(t *testing.T) {
	tbs := fakeTrustBundles{names: map[string]string{"root": "ROOT"}, signers: map[string]string{"example.com/s/true": "ALIVE"}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}}
	alive := &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "true"}}
	for _, tc := range []struct {
		name    string
		src     v1.ClusterTrustBundleProjection
		mode    *int32
		noAPI   bool
		want    string
		wantErr string
	}{
		{name: "by name", src: v1.ClusterTrustBundleProjection{Name: ptr("root"), Path: "ca.pem"}, want: "ROOT"},
		{name: "by signer", src: v1.ClusterTrustBundleProjection{SignerName: ptr("example.com/s"), LabelSelector: alive, Path: "ca.pem"}, mode: ptr[int32](0o400), want: "ALIVE"},
		{name: "missing, optional", src: v1.ClusterTrustBundleProjection{Name: ptr("nope"), Optional: ptr(true), Path: "ca.pem"}, want: ""},
		{name: "missing", src: v1.ClusterTrustBundleProjection{Name: ptr("nope"), Path: "ca.pem"}, wantErr: "not found"},
		{name: "signer, nothing matches", src: v1.ClusterTrustBundleProjection{SignerName: ptr("example.com/s"), Path: "ca.pem"}, wantErr: "matched zero"},
		{name: "neither name nor signer", src: v1.ClusterTrustBundleProjection{Path: "ca.pem"}, wantErr: "requires either name or signerName"},
		{name: "static pod", src: v1.ClusterTrustBundleProjection{Name: ptr("root"), Path: "ca.pem"}, noAPI: true, wantErr: "not supported in static kubelet mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t, storeWith())
			if !tc.noAPI {
				m.cfg.TrustBundles = tbs
			}
			got, err := m.projectedPayload(pod, "v", &v1.ProjectedVolumeSource{DefaultMode: tc.mode, Sources: []v1.VolumeProjection{{ClusterTrustBundle: &tc.src}}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f, ok := got["ca.pem"]
			if !ok || len(got) != 1 || string(f.Data) != tc.want || f.Mode != modeOr(tc.mode, defaultFileMode) {
				t.Errorf("payload %+v, want ca.pem = %q with mode %o", got, tc.want, modeOr(tc.mode, defaultFileMode))
			}
		})
	}
}
