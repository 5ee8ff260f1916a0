package k8s

import (
	"os"
	"regexp"
	"testing"

	imageutils "k8s.io/kubernetes/test/utils/image"
)

// harnessImages is the conformance driver's list of the e2e images it
// rebuilds locally.
const harnessImages = "../images.go"

// TestHarnessImagesMatchUpstream: every image the driver builds is named
// as the pinned e2e.test asks for it, so that a Kubernetes bump that moves
// an image tag fails here and not as ErrImagePull in every test.
func TestHarnessImagesMatchUpstream(t *testing.T) {
	b, err := os.ReadFile(harnessImages)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(\w+)Repo\s*=\s*"([^"]+)"`).FindAllStringSubmatch(string(b), -1) {
		got[m[1]] = "registry.k8s.io/" + m[2]
	}
	for name, id := range map[string]imageutils.ImageID{
		"agnhost": imageutils.Agnhost, "agnhostPrev": imageutils.AgnhostPrev, "busybox": imageutils.BusyBox, "pause": imageutils.Pause,
		"nonroot": imageutils.NonRoot, "nonewprivs": imageutils.Nonewprivs, "kitten": imageutils.Kitten, "nautilus": imageutils.Nautilus,
		"glibcDNS": imageutils.GlibcDnsTesting, "nginx": imageutils.Nginx,
	} {
		if want := imageutils.GetE2EImage(id); got[name] != want {
			t.Errorf("%s: the driver builds %q, e2e.test pulls %q (test/conformance/images.go)", name, got[name], want)
		}
	}
}
