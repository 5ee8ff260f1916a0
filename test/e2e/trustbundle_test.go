package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certsv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// testCAPEM is a self-signed CA certificate named cn, PEM-encoded.
func testCAPEM(t *testing.T, cn string) string {
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
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestClusterTrustBundleVolume: projected clusterTrustBundle sources of an
// API pod get the anchors of the named ClusterTrustBundle and of the
// signer's bundles matching the selector; an edited bundle is rewritten
// into the running pod; a pod naming a bundle that does not exist waits
// (FailedMount with the kubelet's message) and starts once it is created.
func TestClusterTrustBundleVolume(t *testing.T) {
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	e.StartAgent(t, AgentOptions{Args: apiAgentArgs(c)})
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	waitNodeReady(t, cs)

	root, alive, dead, later := testCAPEM(t, "root"), testCAPEM(t, "alive"), testCAPEM(t, "dead"), testCAPEM(t, "later")
	createCTB := func(name, signer, bundle string, lbls map[string]string) {
		t.Helper()
		ctb := &certsv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
			Spec: certsv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: bundle}}
		if _, err := cs.CertificatesV1().ClusterTrustBundles().Create(ctx, ctb, metav1.CreateOptions{}); err != nil {
			t.Fatalf("ClusterTrustBundle %s: %v", name, err)
		}
		t.Cleanup(func() {
			_ = cs.CertificatesV1().ClusterTrustBundles().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	createCTB("skiff-root", "", root, nil)
	createCTB("skiff.test:e2e:alive", "skiff.test/e2e", alive, map[string]string{"alive": "true"})
	createCTB("skiff.test:e2e:dead", "skiff.test/e2e", dead, map[string]string{"alive": "false"})

	name, signer := "skiff-root", "skiff.test/e2e"
	vol := v1.Volume{Name: "ctb", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: &name, Path: "root.pem"}},
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{SignerName: &signer, Path: "alive.pem",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "true"}}}},
	}}}}
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, apiPod("anchors", 1, "sleep 100000", vol), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, cs, "anchors", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	waitFile := func(path, want, what string) {
		t.Helper()
		var got string
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, apiTimeout, true, func(context.Context) (bool, error) {
			got = kubectl(t, c, "exec", "anchors", "--", "cat", path)
			return got == want, nil
		})
		if err != nil {
			t.Fatalf("%s: %s is\n%s\nwant\n%s", what, path, got, want)
		}
	}
	waitFile("/out/root.pem", root, "by name")
	waitFile("/out/alive.pem", alive, "by signer and labels (not the dead one)")

	// An edit reaches the running pod.
	b, err := cs.CertificatesV1().ClusterTrustBundles().Get(ctx, "skiff-root", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Spec.TrustBundle = root + later
	if _, err := cs.CertificatesV1().ClusterTrustBundles().Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, apiTimeout, true, func(context.Context) (bool, error) {
		got = kubectl(t, c, "exec", "anchors", "--", "cat", "/out/root.pem")
		return strings.Count(got, "BEGIN CERTIFICATE") == 2, nil
	})
	if err != nil || !strings.Contains(got, root) || !strings.Contains(got, later) {
		t.Errorf("after the edit root.pem is\n%s\nwant both anchors", got)
	}

	// A missing bundle holds the pod back until it exists.
	missing := "skiff-late"
	waiting := apiPod("waits", 1, "sleep 100000", v1.Volume{Name: "ctb", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: &missing, Path: "late.pem"}}}}}})
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, waiting, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, cs, "waits", "FailedMount",
		`MountVolume.SetUp failed for volume "ctb" : while getting ClusterTrustBundle: clustertrustbundles.certificates.k8s.io "skiff-late" not found`)
	p, err := cs.CoreV1().Pods(namespace).Get(ctx, "waits", metav1.GetOptions{})
	if err != nil || p.Status.Phase != v1.PodPending {
		t.Fatalf("pod waits: %v, want Pending:\n%s", err, dump(p))
	}
	createCTB(missing, "", later, nil)
	waitAPIPod(t, cs, "waits", "Running once the bundle exists", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
}
