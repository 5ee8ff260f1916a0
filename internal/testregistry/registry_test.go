package testregistry

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/skiffnode/skiff/internal/imagebuild"
)

const user, password = "skiff", "s3cret"

// testImage builds a small single-layer image.
func testImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := imagebuild.Build([]imagebuild.File{{Path: "hello.txt", Mode: 0o644, Data: make([]byte, 64<<10)}},
		imagebuild.Config{Cmd: []string{"/hello"}})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// startTLS starts a TLS registry with basic auth, closed at the end.
func startTLS(t *testing.T) *Registry {
	t.Helper()
	r, err := Start(Options{Dir: t.TempDir(), Username: user, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// pullOpts are go-containerregistry client options for r with auth.
func pullOpts(ctx context.Context, r *Registry, auth authn.Authenticator) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithTransport(r.Transport()), remote.WithAuth(auth)}
}

// TestTLSAndCA: the registry serves https with a certificate that only
// the ca.pem it wrote makes trusted.
func TestTLSAndCA(t *testing.T) {
	r := startTLS(t)
	if r.URL() != "https://"+r.Host || filepath.Base(r.CAFile) != "ca.pem" {
		t.Fatalf("URL %q CAFile %q", r.URL(), r.CAFile)
	}
	pem, err := os.ReadFile(r.CAFile)
	if err != nil || len(pem) == 0 {
		t.Fatalf("ca.pem: %v", err)
	}
	// Without the CA the handshake fails.
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}, Timeout: 10 * time.Second}
	if resp, err := plain.Get(r.URL() + "/v2/"); err == nil {
		_ = resp.Body.Close()
		t.Fatal("GET /v2/ without the test CA succeeded; want a certificate error")
	}
	// With it, /v2/ answers 401 with a Basic challenge (no credentials).
	c := &http.Client{Transport: r.Transport(), Timeout: 10 * time.Second}
	resp, err := c.Get(r.URL() + "/v2/")
	if err != nil {
		t.Fatalf("GET /v2/ trusting the CA: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="testregistry"` {
		t.Fatalf("GET /v2/ without credentials: %d %q, want 401 with a Basic challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	req, _ := http.NewRequest(http.MethodGet, r.URL()+"/v2/", nil)
	req.SetBasicAuth(user, password)
	if resp, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v2/ with credentials: %d, want 200", resp.StatusCode)
	}
}

// TestPushPullByTagAndDigest pushes an archive and pulls it back by tag
// and by digest with the registry's credentials; a wrong password and a
// missing image fail with 401 and 404.
func TestPushPullByTagAndDigest(t *testing.T) {
	ctx := context.Background()
	r := startTLS(t)
	archive := filepath.Join(t.TempDir(), "img.tar")
	if err := imagebuild.WriteArchive(archive, "skiff.test/hello:1", []imagebuild.File{{Path: "a", Mode: 0o644, Data: []byte("a")}}, imagebuild.Config{}); err != nil {
		t.Fatal(err)
	}
	p, err := r.PushArchive(ctx, archive, "team/hello:1")
	if err != nil {
		t.Fatal(err)
	}
	if p.Ref != r.Host+"/team/hello:1" || p.ByDigest() != r.Host+"/team/hello@"+p.Digest {
		t.Fatalf("pushed %+v (by digest %q)", p, p.ByDigest())
	}
	good := &authn.Basic{Username: user, Password: password}
	for _, ref := range []string{p.Ref, p.ByDigest()} {
		img, err := remote.Image(mustRef(t, ref), pullOpts(ctx, r, good)...)
		if err != nil {
			t.Fatalf("pull %s: %v", ref, err)
		}
		d, _ := img.Digest()
		id, _ := img.ConfigName()
		if d.String() != p.Digest || id.String() != p.ImageID {
			t.Errorf("pull %s: digest %s id %s, want %s %s", ref, d, id, p.Digest, p.ImageID)
		}
		layers, _ := img.Layers()
		rc, err := layers[0].Compressed()
		if err != nil {
			t.Fatalf("pull %s: layer: %v", ref, err)
		}
		_, err = io.Copy(io.Discard, rc)
		_ = rc.Close()
		if err != nil {
			t.Fatalf("pull %s: layer: %v", ref, err)
		}
	}
	_, err = remote.Image(mustRef(t, p.Ref), pullOpts(ctx, r, &authn.Basic{Username: user, Password: "wrong"})...)
	if code := transportCode(err); code != http.StatusUnauthorized {
		t.Errorf("pull with a wrong password: %v (code %d), want 401", err, code)
	}
	_, err = remote.Image(mustRef(t, r.Ref("team/missing:1")), pullOpts(ctx, r, good)...)
	if code := transportCode(err); code != http.StatusNotFound {
		t.Errorf("pull of a missing image: %v (code %d), want 404", err, code)
	}
	var missing, unauthorized int
	for _, req := range r.Requests() {
		if req.Path == "/v2/team/missing/manifests/1" && req.Status == http.StatusNotFound {
			missing++
		}
		if req.Status == http.StatusUnauthorized {
			unauthorized++
		}
	}
	if missing == 0 || unauthorized == 0 {
		t.Errorf("Requests: %d 404s of the missing manifest, %d 401s; want both seen:\n%v", missing, unauthorized, r.Requests())
	}
}

// TestMultiArchIndex: the index has an amd64 and an arm64 entry with
// different digests; the one of this machine is the pushed image.
func TestMultiArchIndex(t *testing.T) {
	ctx := context.Background()
	r := startTLS(t)
	img := testImage(t)
	p, err := r.PushIndex(ctx, img, "multi:1")
	if err != nil {
		t.Fatal(err)
	}
	good := &authn.Basic{Username: user, Password: password}
	idx, err := remote.Index(mustRef(t, p.Ref), pullOpts(ctx, r, good)...)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Digest(); d.String() != p.Digest {
		t.Errorf("index digest %s, want %s", d, p.Digest)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	archs := map[string]v1.Hash{}
	for _, m := range im.Manifests {
		archs[m.Platform.Architecture] = m.Digest
	}
	if len(archs) != 2 || archs["amd64"] == archs["arm64"] || archs["amd64"].Hex == "" || archs["arm64"].Hex == "" {
		t.Fatalf("index entries %v, want distinct amd64 and arm64", archs)
	}
	own, _ := img.Digest()
	if archs[runtime.GOARCH] != own {
		t.Errorf("%s entry %s, want the pushed image %s", runtime.GOARCH, archs[runtime.GOARCH], own)
	}
	// A platform-resolving pull gets this machine's image.
	got, err := remote.Image(mustRef(t, p.Ref), append(pullOpts(ctx, r, good), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))...)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := got.ConfigName(); id.String() != p.ImageID {
		t.Errorf("image ID %s, want %s", id, p.ImageID)
	}
}

// TestFaults: blob requests fail, hang until released, or break off
// mid-body; manifests are unaffected.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	r, err := Start(Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if r.URL() != "http://"+r.Host || r.CAFile != "" {
		t.Fatalf("plain registry URL %q CAFile %q", r.URL(), r.CAFile)
	}
	p, err := r.PushImage(ctx, testImage(t), "f:1")
	if err != nil {
		t.Fatal(err)
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(r.Transport())}
	ref := mustRef(t, p.Ref)
	fetchLayer := func(ctx context.Context) error {
		img, err := remote.Image(ref, append(opts, remote.WithContext(ctx))...)
		if err != nil {
			return err
		}
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		rc, err := layers[0].Compressed()
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.Copy(io.Discard, rc)
		return err
	}
	if err := fetchLayer(ctx); err != nil {
		t.Fatalf("no fault: %v", err)
	}
	before := r.BlobRequests()

	r.SetFault(FailBlobs)
	if err := fetchLayer(ctx); transportCode(err) != http.StatusServiceUnavailable {
		t.Errorf("FailBlobs: %v, want 503", err)
	}
	if r.BlobRequests() <= before {
		t.Errorf("BlobRequests %d after a failed blob request, want > %d", r.BlobRequests(), before)
	}

	r.SetFault(CutBlobs)
	if err := fetchLayer(ctx); err == nil {
		t.Error("CutBlobs: the layer downloaded completely, want an error")
	}

	r.SetFault(HangBlobs)
	done := make(chan error, 1)
	go func() { done <- fetchLayer(ctx) }()
	select {
	case <-r.Hanging():
	case <-time.After(30 * time.Second):
		t.Fatal("HangBlobs: no request hanging")
	}
	select {
	case err := <-done:
		t.Fatalf("HangBlobs: the pull returned %v while the blob hangs", err)
	case <-time.After(100 * time.Millisecond):
	}
	r.SetFault(FaultNone)
	if err := <-done; err != nil {
		t.Errorf("after releasing the hang: %v, want the layer", err)
	}

	// A hanging request ends with Close (the registry goes away).
	r.SetFault(HangBlobs)
	go func() { done <- fetchLayer(ctx) }()
	<-r.Hanging()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Error("hanging pull succeeded after Close, want an error")
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// transportCode is the HTTP status of a go-containerregistry error (0 if
// none).
func transportCode(err error) int {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode
	}
	return 0
}

func TestIsBlobRequest(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/v2/a/b/blobs/sha256:abc", true},
		{"HEAD", "/v2/a/blobs/sha256:abc", true},
		{"GET", "/v2/a/manifests/1", false},
		{"POST", "/v2/a/blobs/uploads/", false},
		{"PATCH", "/v2/a/blobs/uploads/123", false},
		{"GET", "/v2/a/blobs/uploads/123", false},
		{"GET", "/v2/", false},
	} {
		req, _ := http.NewRequest(tc.method, "http://x"+tc.path, nil)
		if got := isBlobRequest(req); got != tc.want {
			t.Errorf("%s %s: %t, want %t", tc.method, tc.path, got, tc.want)
		}
	}
}
