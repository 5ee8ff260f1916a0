package k8sversion

import (
	"strings"
	"testing"
)

func TestMajorMinorIsVersions(t *testing.T) {
	if !strings.HasPrefix(Version, "v"+MajorMinor+".") {
		t.Fatalf("MajorMinor %q is not the major and minor of Version %q", MajorMinor, Version)
	}
}
