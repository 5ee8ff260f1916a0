package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skiffnode/skiff/internal/testregistry"
	"github.com/skiffnode/skiff/runtime"
)

// Registry tests that need nothing but the managed containerd: the
// registry is plain HTTP on loopback, which containerd pulls from without
// any registry configuration (its default for localhost hosts), so these
// prove the test registry and skiff's CLI path before the registries file
// exists.

// TestRegistryDirectCRIPull: the managed containerd pulls from the test
// registry through CRI PullImage with basic auth: by tag, by digest, a
// multi-arch index (this architecture's entry), and fails for a wrong
// password, a missing image and a registry that breaks off mid-download.
func TestRegistryDirectCRIPull(t *testing.T) {
	reg := startRegistry(t, testregistry.Options{PlainHTTP: true, Username: regUser, Password: regPassword})
	pushed := pushUnique(t, reg, "e2e/direct:1")
	index, err := reg.PushIndex(t.Context(), uniqueImage(t, 1<<20), "e2e/directmulti:1")
	if err != nil {
		t.Fatal(err)
	}
	flaky := pushUnique(t, reg, "e2e/directflaky:1")
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	rt := e.CRI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	good := &runtime.AuthConfig{Username: regUser, Password: regPassword}

	for _, tc := range []struct{ what, ref, want string }{
		{"by tag", pushed.Ref, pushed.ImageID},
		{"by digest", pushed.ByDigest(), pushed.ImageID},
		{"multi-arch index", index.Ref, index.ImageID},
	} {
		id, err := rt.PullImage(ctx, tc.ref, good)
		if err != nil || id != tc.want {
			t.Errorf("%s: PullImage(%s) = %q, %v; want %s", tc.what, tc.ref, id, err, tc.want)
		}
	}
	if _, err := rt.PullImage(ctx, pushed.Ref, &runtime.AuthConfig{Username: regUser, Password: "wrong"}); err == nil {
		t.Error("PullImage with a wrong password succeeded")
	}
	if _, err := rt.PullImage(ctx, pushed.Ref, nil); err == nil {
		t.Error("PullImage without credentials succeeded")
	}
	if _, err := rt.PullImage(ctx, reg.Ref("e2e/missing:1"), good); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("PullImage of a missing image: %v, want a not-found error", err)
	}
	reg.SetFault(testregistry.CutBlobs)
	before := reg.BlobRequests()
	if _, err := rt.PullImage(ctx, flaky.Ref, good); err == nil {
		t.Error("PullImage succeeded while the registry cuts every blob download")
	}
	if reg.BlobRequests() == before {
		t.Error("no blob request reached the registry: the cut was not mid-pull")
	}
	reg.SetFault(testregistry.FaultNone)
	if id, err := rt.PullImage(ctx, flaky.Ref, good); err != nil || id != flaky.ImageID {
		t.Errorf("PullImage after the registry came back = %q, %v; want %s", id, err, flaky.ImageID)
	}
}

// TestImagesCLIPullLsRm: `skiff images pull` through the agent (an
// anonymous plain-HTTP registry), `ls` with the new image and an image in
// use, `rm` that refuses the image in use and removes the pulled one.
func TestImagesCLIPullLsRm(t *testing.T) {
	reg := startRegistry(t, testregistry.Options{PlainHTTP: true})
	pushed := pushUnique(t, reg, "e2e/cli:1")
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "user.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: user
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, busyboxImage))
	e.WaitForPod(t, PodName("user"), runningAndReady, podStartTimeout)
	busybox, err := e.CRI(t).ImageStatus(t.Context(), busyboxImage)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.containerImageID(t, PodName("user"), "app"); got != busybox.ID {
		t.Errorf("containerImageID = %q, want the image ID %s", got, busybox.ID)
	}

	out, err := e.Skiff(t, "images", "pull", pushed.Ref)
	if err != nil {
		t.Fatalf("skiff images pull: %v\n%s", err, out)
	}
	// Not a terminal: plain lines, the first naming the image.
	if !strings.HasPrefix(out, "Pulling "+pushed.Ref+"\n") || !strings.Contains(out, "Pulled "+pushed.Ref+": image "+pushed.ImageID+", ") {
		t.Errorf("skiff images pull output:\n%s", out)
	}
	out, err = e.Skiff(t, "images", "ls")
	inUse := regexp.MustCompile(`(?m)^skiff\.test/busybox\s+1\.36\s+[0-9a-f]{12,13}\s+\S+\s+in use\s+false$`)
	if err != nil || !inUse.MatchString(out) {
		t.Errorf("skiff images ls: %v; want busybox in use:\n%s", err, out)
	}
	out, err = e.Skiff(t, "images", "rm", busyboxImage)
	if err == nil || !strings.Contains(out, "is used by container app of pod default/"+PodName("user")) {
		t.Errorf("skiff images rm of an image in use: %v\n%s\nwant a refusal naming the container", err, out)
	}
	checkImagesCLI(t, e, reg.Host+"/e2e/cli", pushed)
}

// checkImagesCLI checks that `skiff images ls` lists pushed (repository
// repo, tag from its Ref) and that `skiff images rm` removes it.
func checkImagesCLI(t *testing.T, e *Env, repo string, pushed testregistry.Pushed) {
	t.Helper()
	tag := pushed.Ref[strings.LastIndex(pushed.Ref, ":")+1:]
	id := strings.TrimPrefix(pushed.ImageID, "sha256:")[:13]
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(repo) + `\s+` + regexp.QuoteMeta(tag) + `\s+` + id + `\s+\S+\s+(-|\S+ ago|in use)\s+false$`)
	out, err := e.Skiff(t, "images", "ls")
	if err != nil || !row.MatchString(out) || !strings.HasPrefix(out, "IMAGE ") {
		t.Fatalf("skiff images ls: %v; want a row for %s:\n%s", err, pushed.Ref, out)
	}
	out, err = e.Skiff(t, "images", "rm", pushed.Ref)
	if err != nil || !strings.Contains(out, "Deleted: "+pushed.Ref) {
		t.Fatalf("skiff images rm: %v\n%s", err, out)
	}
	if out, _ := e.Skiff(t, "images", "ls"); strings.Contains(out, id) {
		t.Errorf("image %s still listed after rm:\n%s", id, out)
	}
	if out, err := e.Skiff(t, "images", "rm", pushed.Ref); err == nil {
		t.Errorf("second rm of %s succeeded:\n%s", pushed.Ref, out)
	}
}
