package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/testregistry"
)

// Registry tests (issue 15): images that live only in a loopback registry
// with TLS (a test CA, trusted through --registry-config) and basic auth.

// pullTimeout guards a pod whose image is pulled from the loopback registry.
const pullTimeout = 2 * time.Minute

// TestPullWithPullSecret_E1_E11_E12: a pod whose image lives only in a
// registry with auth runs, with the credentials from a static Secret of
// type kubernetes.io/dockerconfigjson in its imagePullSecrets, and the
// kubelet's Pulling/Pulled events. A second pod takes the same image by
// digest.
func TestPullWithPullSecret_E1_E11_E12(t *testing.T) {
	reg := startRegistry(t, testregistry.Options{Username: regUser, Password: regPassword})
	pushed := pushUnique(t, reg, "e2e/private:1")
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{Args: []string{"--registry-config", e.registriesFile(t, trustRegistry(reg))}})
	secret := pullSecretManifest(t, "regcred", reg.Host, regUser, regPassword)
	e.WriteManifest(t, "private.yaml", secret+"---\n"+pulledPod("private", pushed.Ref, "regcred"))
	p := e.WaitForPod(t, PodName("private"), runningAndReady, pullTimeout)
	e.checkPulledEvents(t, p, pushed.Ref)
	if got := e.containerImageID(t, p.Name, "app"); got != pushed.ImageID {
		t.Errorf("container image %s, want the pushed image %s", got, pushed.ImageID)
	}

	// By digest (E.1's @sha256 form) an image never pulled by tag, in
	// another manifest file: each file holds its own objects, so it names
	// its own secret.
	other := pushUnique(t, reg, "e2e/bydigest:1")
	e.WriteManifest(t, "bydigest.yaml", pullSecretManifest(t, "regcred2", reg.Host, regUser, regPassword)+"---\n"+
		pulledPod("bydigest", other.ByDigest(), "regcred2"))
	p = e.WaitForPod(t, PodName("bydigest"), runningAndReady, pullTimeout)
	e.checkPulledEvents(t, p, other.ByDigest())
	if got := e.containerImageID(t, p.Name, "app"); got != other.ImageID {
		t.Errorf("by digest: container image %s, want %s", got, other.ImageID)
	}
	if st := statusOf(t, p, "app"); !strings.Contains(st.ImageID, other.Digest) {
		t.Errorf("by digest: status imageID %q, want it to name %s", st.ImageID, other.Digest)
	}
}

// TestPullMultiArchIndex_E10: an image index with amd64 and arm64 entries;
// the node gets the entry of its own architecture.
func TestPullMultiArchIndex_E10(t *testing.T) {
	reg := startRegistry(t, testregistry.Options{Username: regUser, Password: regPassword})
	pushed, err := reg.PushIndex(t.Context(), uniqueImage(t, 1<<20), "e2e/multi:1")
	if err != nil {
		t.Fatal(err)
	}
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{Args: []string{"--registry-config", e.registriesFile(t, trustRegistry(reg))}})
	e.WriteManifest(t, "multi.yaml", pullSecretManifest(t, "regcred", reg.Host, regUser, regPassword)+"---\n"+
		pulledPod("multi", pushed.Ref, "regcred"))
	p := e.WaitForPod(t, PodName("multi"), runningAndReady, pullTimeout)
	if got := e.containerImageID(t, p.Name, "app"); got != pushed.ImageID {
		t.Errorf("container image %s, want this architecture's entry %s", got, pushed.ImageID)
	}
}

// TestPullWrongPasswordBacksOff_E8_E9: a wrong password fails the pull:
// Waiting ErrImagePull with Failed events, then ImagePullBackOff with a
// BackOff event, in the kubelet's words; the pod stays Pending.
func TestPullWrongPasswordBacksOff_E8_E9(t *testing.T) {
	reg := startRegistry(t, testregistry.Options{Username: regUser, Password: regPassword})
	pushed := pushUnique(t, reg, "e2e/private:1")
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{Args: []string{"--registry-config", e.registriesFile(t, trustRegistry(reg))}})
	e.WriteManifest(t, "wrongpw.yaml", pullSecretManifest(t, "regcred", reg.Host, regUser, "wrong")+"---\n"+
		pulledPod("wrongpw", pushed.Ref, "regcred"))
	checkPullFailure(t, e, PodName("wrongpw"), pushed.Ref, "")
}

// TestPullMissingImage_E8_E9: an image the registry does not have fails
// the same way, and the Failed event carries the runtime's error as the
// kubelet shows it (the gRPC status text). The pull
// attempts, seen at the registry, follow the kubelet's back-off: the
// second about 10 s after the first, the third about 20 s later.
func TestPullMissingImage_E8_E9(t *testing.T) {
	reg := startRegistry(t, testregistry.Options{Username: regUser, Password: regPassword})
	ref := reg.Ref("e2e/missing:1")
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{Args: []string{"--registry-config", e.registriesFile(t, trustRegistry(reg))}})
	e.WriteManifest(t, "missing.yaml", pullSecretManifest(t, "regcred", reg.Host, regUser, regPassword)+"---\n"+
		pulledPod("missing", ref, "regcred"))
	checkPullFailure(t, e, PodName("missing"), ref, fmt.Sprintf("Failed to pull image %q: rpc error: code = NotFound desc = failed to pull and unpack image %q", ref, ref))
	var attempts []time.Time
	eventually(t, 90*time.Second, func() (bool, string) {
		attempts = pullAttempts(reg.Requests(), "/v2/e2e/missing/manifests/1")
		return len(attempts) >= 3, fmt.Sprintf("registry saw %d pull attempts of the missing image, want 3", len(attempts))
	})
	gap1, gap2 := attempts[1].Sub(attempts[0]), attempts[2].Sub(attempts[1])
	t.Logf("pull attempts %s and %s apart", gap1, gap2)
	if gap1 < 8*time.Second || gap1 > 16*time.Second {
		t.Errorf("second pull %s after the first, want ~10s (8-16s)", gap1)
	}
	if gap2 < 16*time.Second || gap2 > 30*time.Second {
		t.Errorf("third pull %s after the second, want ~20s (16-30s)", gap2)
	}
}

// pullAttempts groups the registry's requests for manifest path into pull
// attempts (requests less than 2 s apart belong to one; a resolver
// retries HEAD and GET) and returns when each began.
func pullAttempts(reqs []testregistry.Request, path string) []time.Time {
	var out []time.Time
	var last time.Time
	for _, r := range reqs {
		if r.Path != path {
			continue
		}
		if len(out) == 0 || r.Time.Sub(last) >= 2*time.Second {
			out = append(out, r.Time)
		}
		last = r.Time
	}
	return out
}

// checkPullFailure waits for ErrImagePull, then ImagePullBackOff, and
// checks the events; failedPart must appear in the Failed event's error.
func checkPullFailure(t *testing.T, e *Env, pod, ref, failedPart string) {
	t.Helper()
	p := e.WaitForPod(t, pod, containerCond("app", waitingReason("ErrImagePull")), pullTimeout)
	if p.Status.Phase != v1.PodPending {
		t.Errorf("phase %s during ErrImagePull, want Pending", p.Status.Phase)
	}
	failed := e.WaitForEvent(t, p, ctr("app"), "Failed", fmt.Sprintf("Failed to pull image %q: ", ref), 10*time.Second)
	if failed.Type != v1.EventTypeWarning || !strings.Contains(failed.Message, failedPart) {
		t.Errorf("Failed event %s %q, want Warning containing %q", failed.Type, failed.Message, failedPart)
	}
	e.WaitForEvent(t, p, ctr("app"), "Failed", "Error: ErrImagePull", 10*time.Second)
	p = e.WaitForPod(t, pod, containerCond("app", waitingReason("ImagePullBackOff")), pullTimeout)
	if msg := statusOf(t, p, "app").State.Waiting.Message; !strings.HasPrefix(msg, fmt.Sprintf("Back-off pulling image %q", ref)) {
		t.Errorf("ImagePullBackOff message %q, want the kubelet's \"Back-off pulling image %q...\"", msg, ref)
	}
	backoff := e.WaitForEvent(t, p, ctr("app"), "BackOff", fmt.Sprintf("Back-off pulling image %q", ref), 30*time.Second)
	if backoff.Type != v1.EventTypeNormal {
		t.Errorf("BackOff event type %s, want Normal (as the kubelet records it)", backoff.Type)
	}
	e.WaitForEvent(t, p, ctr("app"), "Failed", "Error: ImagePullBackOff", 30*time.Second)
	if p.Status.Phase != v1.PodPending {
		t.Errorf("phase %s during ImagePullBackOff, want Pending", p.Status.Phase)
	}
}

// TestPullRegistryGoesAwayMidPull: the registry breaks off the layer
// download: ErrImagePull; once it serves again the pod runs after its
// back-off.
func TestPullRegistryGoesAwayMidPull(t *testing.T) {
	reg := startRegistry(t, testregistry.Options{Username: regUser, Password: regPassword})
	pushed := pushUnique(t, reg, "e2e/flaky:1")
	reg.SetFault(testregistry.CutBlobs)
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{Args: []string{"--registry-config", e.registriesFile(t, trustRegistry(reg))}})
	e.WriteManifest(t, "flaky.yaml", pullSecretManifest(t, "regcred", reg.Host, regUser, regPassword)+"---\n"+
		pulledPod("flaky", pushed.Ref, "regcred"))
	p := e.WaitForPod(t, PodName("flaky"), containerCond("app", waitingReason("ErrImagePull")), pullTimeout)
	if reg.BlobRequests() == 0 {
		t.Error("ErrImagePull before any blob request: the cut did not happen mid-pull")
	}
	e.WaitForEvent(t, p, ctr("app"), "Failed", fmt.Sprintf("Failed to pull image %q: ", pushed.Ref), 10*time.Second)
	reg.SetFault(testregistry.FaultNone)
	e.WaitForPod(t, p.Name, runningAndReady, pullTimeout)
}

// TestPullThroughMirror: registries.yaml mirrors a host that does not
// resolve to the loopback registry, with the registry's CA and
// credentials from the same file (no pull secret).
func TestPullThroughMirror(t *testing.T) {
	reg := startRegistry(t, testregistry.Options{Username: regUser, Password: regPassword})
	pushUnique(t, reg, "e2e/mirrored:1")
	e := NewEnv(t)
	cfg := fmt.Sprintf(`mirrors:
  %q:
    endpoint:
      - %q
configs:
  %q:
    auth:
      username: %s
      password: %s
    tls:
      ca_file: %s
`, mirroredHost, reg.URL(), reg.Host, regUser, regPassword, reg.CAFile)
	e.StartAgent(t, AgentOptions{Args: []string{"--registry-config", e.registriesFile(t, cfg)}})
	ref := mirroredHost + "/e2e/mirrored:1"
	e.WriteManifest(t, "mirror.yaml", pulledPod("mirror", ref, ""))
	p := e.WaitForPod(t, PodName("mirror"), runningAndReady, pullTimeout)
	e.checkPulledEvents(t, p, ref)
}

// TestPullWithNodeCredentials_E11_E13: credentials from the node's docker
// config.json (--image-credential-file), no pull secret.
func TestPullWithNodeCredentials_E11_E13(t *testing.T) {
	reg := startRegistry(t, testregistry.Options{Username: regUser, Password: regPassword})
	pushed := pushUnique(t, reg, "e2e/node:1")
	e := NewEnv(t)
	credFile := filepath.Join(e.Dir, "config.json")
	if err := os.WriteFile(credFile, []byte(dockerConfigJSON(t, reg.Host, regUser, regPassword)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.StartAgent(t, AgentOptions{Args: []string{
		"--registry-config", e.registriesFile(t, trustRegistry(reg)), "--image-credential-file", credFile,
	}})
	e.WriteManifest(t, "nodecred.yaml", pulledPod("nodecred", pushed.Ref, ""))
	p := e.WaitForPod(t, PodName("nodecred"), runningAndReady, pullTimeout)
	e.checkPulledEvents(t, p, pushed.Ref)

	// skiff images pull goes through the agent, so it has the node's
	// credentials too; ls lists the image, rm removes it.
	other := pushUnique(t, reg, "e2e/cli:1")
	out, err := e.Skiff(t, "images", "pull", other.Ref)
	if err != nil || !strings.Contains(out, "Pulled "+other.Ref+": image "+other.ImageID) {
		t.Fatalf("skiff images pull: %v\n%s", err, out)
	}
	checkImagesCLI(t, e, reg.Host+"/e2e/cli", other)
}
