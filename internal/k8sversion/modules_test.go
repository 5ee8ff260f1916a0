package k8sversion

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// staging matches a k8s.io module at a release version (v0.<minor>.<patch>),
// which only Kubernetes' staging modules have (klog, utils and kube-openapi
// are versioned on their own), in a require or a replace directive. v0.0.0
// is upstream's own placeholder for them, which a replace overrides.
var staging = regexp.MustCompile(`^\s*(?:require\s+)?(k8s\.io/[a-z-]+)\s+(?:=>\s+k8s\.io/[a-z-]+\s+)?(v0\.[0-9]+\.[0-9]+)(?:\s|$)`)

// TestModulesAtVersion: every go.mod of the repository names Version's
// release (hack/bump-kubernetes.sh writes them), test/controlplane/oldest
// OldestAPIServer's: the staging modules at v0.<minor>.<patch>, and
// k8s.io/kubernetes itself where upstream's binaries are built.
func TestModulesAtVersion(t *testing.T) {
	if lib := "v0" + strings.TrimPrefix(OldestAPIServer, "v1"); !staging.MatchString("k8s.io/api " + lib) {
		t.Fatalf("OldestAPIServer %q is not v1.<minor>.<patch>", OldestAPIServer)
	}
	release := map[string]string{"test/controlplane/oldest": OldestAPIServer}
	withKubernetes := map[string]bool{"cmd/skiff-apiserver": true, "test/controlplane": true, "test/conformance/k8s": true, "bench/kubelet": true, "test/controlplane/oldest": true}
	// test/metricsserver keeps its release's libraries (see its go.mod).
	for _, dir := range []string{".", "bench", "cmd/skiff-apiserver", "test/controlplane", "test/conformance/k8s", "bench/kubelet", "test/controlplane/oldest"} {
		want := Version
		if r, ok := release[dir]; ok {
			want = r
		}
		lib := "v0" + strings.TrimPrefix(want, "v1")
		path := filepath.Join("..", "..", dir, "go.mod")
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		n, kubernetes := 0, ""
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if m := staging.FindStringSubmatch(line); m != nil && m[2] != "v0.0.0" {
				n++
				if m[2] != lib {
					t.Errorf("%s: %s at %s, want %s (release %s; run hack/bump-kubernetes.sh)", path, m[1], m[2], lib, want)
				}
			}
			if fs := strings.Fields(line); len(fs) >= 2 && fs[0] == "k8s.io/kubernetes" {
				kubernetes = fs[1]
			}
		}
		_ = f.Close()
		if n == 0 {
			t.Errorf("%s: no k8s.io staging module found", path)
		}
		if withKubernetes[dir] && kubernetes != want {
			t.Errorf("%s: k8s.io/kubernetes %q, want %s", path, kubernetes, want)
		}
	}
}
