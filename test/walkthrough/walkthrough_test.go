package walkthrough

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skiffnode/skiff/controlplane"
	"github.com/skiffnode/skiff/test/cluster"
)

// pollTimeout bounds a step's `until` polling (a failure guard).
const pollTimeout = 60 * time.Second

// knownDiffs are the steps whose output still differs on the shim, with
// the reason; the test logs them instead of failing, and fails when one
// matches again (so that the entry is removed).
var knownDiffs = map[string]string{}

// TestWalkthroughsMatchKubeAPIServer_I58_I72 runs every walk-through
// against the shim and a real control plane and compares each step's
// normalized output and exit status.
func TestWalkthroughsMatchKubeAPIServer_I58_I72(t *testing.T) {
	shim, kube := startServers(t)
	ctx := context.Background()
	for _, w := range walkthroughs {
		for _, s := range w {
			got, want := s.runOn(ctx, t, shim), s.runOn(ctx, t, kube)
			reason, known := knownDiffs[s.id]
			switch {
			case got == want && known:
				t.Errorf("%s: now matches kube-apiserver; remove it from knownDiffs (%s)", s.id, reason)
			case got == want:
				t.Logf("%s: same\n%s", s.id, got)
			case known:
				t.Logf("%s: differs (known: %s)\nshim:\n%s\nkube-apiserver:\n%s", s.id, reason, got, want)
			default:
				t.Errorf("%s: kubectl %s differs\nshim:\n%s\nkube-apiserver:\n%s", s.id, strings.Join(s.args, " "), got, want)
			}
		}
	}
}

// runOn runs s against srv (polling while until is not met) and returns
// its normalized result.
func (s step) runOn(ctx context.Context, t *testing.T, srv *server) string {
	t.Helper()
	deadline := time.Now().Add(pollTimeout)
	for {
		r := s.once(ctx, t, srv)
		if s.codeOnly {
			r.out = ""
		}
		out := fmt.Sprintf("[%d]\n%s", r.code, normalize(r.out))
		if s.until == "" || strings.Contains(out, s.until) || time.Now().After(deadline) {
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s step) once(ctx context.Context, t *testing.T, srv *server) result {
	if s.method != "" {
		return srv.request(ctx, s.method, expand(ctx, t, srv, s.path), expand(ctx, t, srv, s.body))
	}
	args := make([]string, len(s.args))
	for i, a := range s.args {
		args[i] = expand(ctx, t, srv, a)
	}
	return srv.run(ctx, expand(ctx, t, srv, s.stdin), args...)
}

var uidRef = regexp.MustCompile(`\{\{uid ([^}]+)\}\}`)

// expand replaces {{uid kind/name}} with that object's UID on srv.
func expand(ctx context.Context, t *testing.T, srv *server, s string) string {
	return uidRef.ReplaceAllStringFunc(s, func(m string) string {
		obj := uidRef.FindStringSubmatch(m)[1]
		r := srv.run(ctx, "", "get", obj, "-o", "jsonpath={.metadata.uid}")
		if r.code != 0 {
			t.Fatalf("%s: uid of %s: %s", srv.name, obj, r.out)
		}
		return r.out
	})
}

// startServers starts the shim (standalone, no agent) and the real
// control plane, or skips without their binaries.
func startServers(t *testing.T) (shim, kube *server) {
	t.Helper()
	apiserver, kubeBin := os.Getenv("SKIFF_APISERVER"), os.Getenv("SKIFF_CONTROLPLANE")
	if os.Getenv("SKIFF_E2E") != "1" || apiserver == "" || kubeBin == "" {
		t.Skip("set SKIFF_E2E=1, SKIFF_APISERVER (make build-apiserver) and SKIFF_CONTROLPLANE (make controlplane); make e2e does")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{Dir: filepath.Join(dir, "kube"), Bin: kubeBin, Logf: t.Logf})
	if err != nil {
		t.Fatalf("control plane: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := controlplane.Start(ctx, controlplane.Config{
		Binary: apiserver, DataDir: filepath.Join(dir, "shim"), Port: port,
	})
	if err != nil {
		t.Fatalf("shim: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	shim = &server{name: "shim", kubectl: kubeBin, kubeconfig: s.AdminKubeconfig()}
	kube = &server{name: "kube-apiserver", kubectl: kubeBin, kubeconfig: c.Kubeconfig("admin")}
	t.Cleanup(shim.close)
	t.Cleanup(kube.close)
	return shim, kube
}
