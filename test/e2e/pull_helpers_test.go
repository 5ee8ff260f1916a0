package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ggcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/testregistry"
	"github.com/skiffnode/skiff/runtime/cri"
)

// Helpers of the registry tests (issue 15): a loopback registry per test,
// images unique to the test (so containerd really downloads their layers),
// the registries file and docker credentials.

const (
	regUser     = "skiff"
	regPassword = "pull-s3cret"
	// mirroredHost is a registry name that does not resolve: only a
	// registries.yaml mirror makes its images pullable.
	mirroredHost = "registry.invalid"
)

// startRegistry starts a loopback registry for the test (TLS with its CA
// in dir, basic auth unless plain) and, at the end of the test, after the
// test's Env has torn its pods down (register it before NewEnv), removes
// from containerd every image pulled from it or from mirroredHost, then
// stops the registry.
func startRegistry(t *testing.T, opts testregistry.Options) *testregistry.Registry {
	t.Helper()
	if theSuite == nil {
		t.Skip(skipReason)
	}
	if opts.Dir == "" && !opts.PlainHTTP {
		opts.Dir = t.TempDir()
	}
	reg, err := testregistry.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		removeImagesFrom(t, reg.Host+"/", mirroredHost+"/")
		_ = reg.Close()
	})
	return reg
}

// removeImagesFrom removes the images of the suite's containerd whose
// names or digests start with one of prefixes.
func removeImagesFrom(t *testing.T, prefixes ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := cri.New(ctx, theSuite.criEndpoint(), 30*time.Second)
	if err != nil {
		return // no containerd (the agent never started): nothing pulled
	}
	defer rt.Close()
	imgs, err := rt.ListImages(ctx)
	if err != nil {
		t.Logf("cleanup: list images: %v", err)
		return
	}
	for _, img := range imgs {
		for _, name := range append(append([]string{}, img.RepoTags...), img.RepoDigests...) {
			if hasAnyPrefix(name, prefixes) {
				if err := rt.RemoveImage(ctx, img.ID); err != nil {
					t.Logf("cleanup: remove image %s: %v", img.ID, err)
				}
				break
			}
		}
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// uniqueImage is the suite's busybox image with one more layer holding
// size random bytes at /unique: its own digest and a layer containerd
// does not have yet, so pulling it downloads at least size bytes.
func uniqueImage(t *testing.T, size int) ggcrv1.Image {
	t.Helper()
	base, err := tarball.ImageFromPath(filepath.Join(theSuite.Root, "images", "busybox.tar"), nil)
	if err != nil {
		t.Fatalf("read busybox archive: %v", err)
	}
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "unique", Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layerTar := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// pushUnique pushes a new unique image (1 MiB layer) as repo.
func pushUnique(t *testing.T, reg *testregistry.Registry, repo string) testregistry.Pushed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := reg.PushImage(ctx, uniqueImage(t, 1<<20), repo)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// registriesFile writes a registries.yaml (k3s format) with content into
// the test's directory and returns its path. On the external runtime it
// skips the test: skiff refuses --registry-config there, as it configures
// the managed containerd's registries.
func (e *Env) registriesFile(t *testing.T, content string) string {
	t.Helper()
	e.SkipOnExternalRuntime(t, "--registry-config configures the managed containerd's registries")
	path := filepath.Join(e.Dir, "registries.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// trustRegistry is a registries.yaml that trusts reg's CA (no auth: the
// credentials come from the pod or the node).
func trustRegistry(reg *testregistry.Registry) string {
	return fmt.Sprintf(`configs:
  %q:
    tls:
      ca_file: %s
`, reg.Host, reg.CAFile)
}

// dockerConfigJSON is a docker config.json with user:password for host.
func dockerConfigJSON(t *testing.T, host, user, password string) string {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	b, err := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pullSecretManifest is a Secret of type kubernetes.io/dockerconfigjson
// named name holding user:password for host, as a static-pod object.
func pullSecretManifest(t *testing.T, name, host, user, password string) string {
	t.Helper()
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '%s'
`, name, dockerConfigJSON(t, host, user, password))
}

// pulledPod is a pod running image (sleeping until stopped), with
// imagePullSecrets secret when not empty.
func pulledPod(name, image, secret string) string {
	secrets := ""
	if secret != "" {
		secrets = fmt.Sprintf("  imagePullSecrets:\n  - name: %s\n", secret)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 5
%s  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "test -f /unique || exit 3; trap 'exit 0' TERM; while true; do sleep 1; done"]
`, name, secrets, image)
}

// checkPulledEvents checks the kubelet's Pulling and Pulled events of
// container app for image.
func (e *Env) checkPulledEvents(t *testing.T, p *v1.Pod, image string) {
	t.Helper()
	e.WaitForEvent(t, p, ctr("app"), "Pulling", fmt.Sprintf("Pulling image %q", image), 10*time.Second)
	ev := e.WaitForEvent(t, p, ctr("app"), "Pulled", fmt.Sprintf("Successfully pulled image %q in ", image), 10*time.Second)
	if !strings.Contains(ev.Message, " including waiting). Image size: ") || !strings.HasSuffix(ev.Message, " bytes.") {
		t.Errorf("Pulled event %q, want the kubelet's wording (\"... in 1.2s (1.2s including waiting). Image size: N bytes.\")", ev.Message)
	}
}

// containerImageID is the image ID (config digest) of the newest container
// called container in pod podName, from ListContainers: containerd's
// ContainerStatus reports a repo digest instead when the image has one.
func (e *Env) containerImageID(t *testing.T, podName, container string) string {
	t.Helper()
	labels := podLabels(podName)
	labels["io.kubernetes.container.name"] = container
	cs := e.Containers(t, labels)
	if len(cs) == 0 {
		t.Fatalf("no container %q of pod %s in the runtime", container, podName)
	}
	return cs[len(cs)-1].ImageRef
}
