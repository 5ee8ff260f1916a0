package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fakePodCerts struct {
	key, chain string
	err        error
	calls      []string
}

func (f *fakePodCerts) Bundle(pod *v1.Pod, volume string, index int, src *v1.PodCertificateProjection) ([]byte, []byte, error) {
	f.calls = append(f.calls, string(pod.UID)+"/"+volume+"/"+string(rune('0'+index))+"/"+src.SignerName)
	if f.err != nil {
		return nil, nil, f.err
	}
	return []byte(f.key), []byte(f.chain), nil
}

// TestProjectedPodCertificate: a podCertificate source becomes the
// credential bundle (key, then chain), the key file and the chain file it
// names, asked for by pod, volume and source index; a pending or denied
// request fails the set-up with the source's error; without an API server
// it fails with the kubelet's.
func TestProjectedPodCertificate(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}}
	src := &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Optional: ptr(true)}},
		{PodCertificate: &v1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ECDSAP256",
			CredentialBundlePath: "bundle.pem", KeyPath: "key.pem", CertificateChainPath: "chain.pem"}},
	}}
	m := newTestManager(t, storeWith())
	certs := &fakePodCerts{key: "KEY\n", chain: "LEAF\nCA\n"}
	m.cfg.PodCertificates = certs
	got, err := m.projectedPayload(pod, "creds", src)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"bundle.pem": "KEY\nLEAF\nCA\n", "key.pem": "KEY\n", "chain.pem": "LEAF\nCA\n"} {
		if f := got[path]; string(f.Data) != want || f.Mode != 0o644 || f.Owner != nil {
			t.Errorf("%s = %q mode %o owner %v, want %q 644 unowned", path, f.Data, f.Mode, f.Owner, want)
		}
	}
	if len(certs.calls) != 1 || certs.calls[0] != "u1/creds/1/example.com/s" {
		t.Errorf("Bundle calls %q, want one for u1/creds/1", certs.calls)
	}

	certs.err = errors.New("credential bundle is not issued yet")
	if _, err := m.projectedPayload(pod, "creds", src); err == nil || err.Error() != "credential bundle is not issued yet" {
		t.Errorf("pending: err = %v", err)
	}
	// Two sources pending: both are asked (each request is made at once,
	// not after the other's issuance), the errors returned together.
	two := &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{src.Sources[1], src.Sources[1]}}
	certs.calls = nil
	if _, err := m.projectedPayload(pod, "creds", two); err == nil || len(certs.calls) != 2 {
		t.Errorf("two pending sources: err %v, calls %q; want both asked", err, certs.calls)
	}
	m.cfg.PodCertificates = nil
	if _, err := m.projectedPayload(pod, "creds", src); err == nil || err.Error() != "unimplemented" {
		t.Errorf("no API server: err = %v", err)
	}
}

// TestCredentialFile: credential files are 0600 and owned by the user all
// containers run as (the kubelet's FsUserFrom), or 0600 for the fsGroup
// to widen; otherwise they have the volume's mode.
func TestCredentialFile(t *testing.T) {
	u := func(n int64) *v1.SecurityContext { return &v1.SecurityContext{RunAsUser: &n} }
	for _, tc := range []struct {
		name      string
		spec      v1.PodSpec
		wantMode  int32
		wantOwner int64 // -1: none
	}{
		{"no user, no group", v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, 0o644, -1},
		{"pod runAsUser", v1.PodSpec{SecurityContext: &v1.PodSecurityContext{RunAsUser: ptr(int64(1000))},
			Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}, 0o600, 1000},
		{"containers agree", v1.PodSpec{InitContainers: []v1.Container{{Name: "i", SecurityContext: u(7)}},
			Containers: []v1.Container{{Name: "a", SecurityContext: u(7)}}}, 0o600, 7},
		{"containers differ", v1.PodSpec{Containers: []v1.Container{{Name: "a", SecurityContext: u(7)}, {Name: "b", SecurityContext: u(8)}}}, 0o644, -1},
		{"one without a user", v1.PodSpec{Containers: []v1.Container{{Name: "a", SecurityContext: u(7)}, {Name: "b"}}}, 0o644, -1},
		{"container overrides pod", v1.PodSpec{SecurityContext: &v1.PodSecurityContext{RunAsUser: ptr(int64(1000))},
			Containers: []v1.Container{{Name: "a", SecurityContext: u(7)}, {Name: "b"}}}, 0o644, -1},
		{"fsGroup only", v1.PodSpec{SecurityContext: &v1.PodSecurityContext{FSGroup: ptr(int64(2000))},
			Containers: []v1.Container{{Name: "a"}}}, 0o600, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := credentialFile(&v1.Pod{Spec: tc.spec}, 0o644)
			owner := int64(-1)
			if f.Owner != nil {
				owner = *f.Owner
			}
			if f.Mode != tc.wantMode || owner != tc.wantOwner {
				t.Errorf("mode %o owner %d, want %o %d", f.Mode, owner, tc.wantMode, tc.wantOwner)
			}
		})
	}
}

// TestWriteAtomicOwner: a file with an owner is written owned by it, and
// a rewrite with another owner is a change.
func TestWriteAtomicOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	dir := t.TempDir()
	t0 := time.Unix(1700000000, 0)
	owner := int64(1234)
	if _, err := writeAtomic(dir, map[string]file{"token": {Data: []byte("t"), Mode: 0o600, Owner: &owner}}, t0, nil); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := info.Sys().(*syscall.Stat_t).Uid; uid != 1234 || info.Mode().Perm() != 0o600 {
		t.Errorf("token: uid %d mode %v, want 1234 0600", uid, info.Mode().Perm())
	}
	changed, err := writeAtomic(dir, map[string]file{"token": {Data: []byte("t"), Mode: 0o600}}, t0.Add(time.Second), nil)
	if err != nil || !changed {
		t.Errorf("another owner: changed %v, %v; want a rewrite", changed, err)
	}
	if info, _ := os.Stat(filepath.Join(dir, "token")); info.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		t.Error("the rewrite kept the old owner")
	}
}
