package k8s

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	_ "k8s.io/kubernetes/pkg/features" // registers the gates
)

// featuresDoc is the table of the Kubernetes features skiff answers for.
const featuresDoc = "../../../docs/kubelet-features.md"

// baseline is the release skiff followed before (issue 32); the table
// lists what changed since.
const baseline = "1.34"

// effective is the spec of a gate at version v: the last one in force.
func effective(specs featuregate.VersionedSpecs, v *version.Version) (featuregate.FeatureSpec, bool) {
	var out featuregate.FeatureSpec
	found := false
	for _, s := range specs {
		if s.Version != nil && !s.Version.GreaterThan(v) {
			out, found = s, true
		}
	}
	return out, found
}

// changedOn lists the gates on by default at current (Beta or GA, not
// Deprecated) whose stage or default differ at base: what a node of
// current gains over one of base.
func changedOn(base, current *version.Version) map[string]featuregate.FeatureSpec {
	out := map[string]featuregate.FeatureSpec{}
	for name, specs := range utilfeature.DefaultMutableFeatureGate.GetAllVersioned() {
		specs = slices.Clone(specs)
		sort.Sort(specs)
		now, ok := effective(specs, current)
		if !ok || !now.Default || now.PreRelease == featuregate.Deprecated {
			continue
		}
		if was, ok := effective(specs, base); ok && was.Default && was.PreRelease == now.PreRelease {
			continue
		}
		out[string(name)] = now
	}
	return out
}

// row is a table row of the doc whose first cell is a gate in backquotes
// and whose second cell starts with its stage.
var row = regexp.MustCompile("^\\| `([A-Za-z0-9]+)` \\| (GA|Beta)\\b")

// TestFeatureTableCoversUpstream: docs/kubelet-features.md has a row for
// every feature gate that is on by default in the Kubernetes release of
// this module and was not (or not at that stage) in the baseline, with its
// stage, and no row for any other gate.
func TestFeatureTableCoversUpstream(t *testing.T) {
	current := version.MustParse(strings.TrimPrefix(currentRelease(t), "v"))
	current = version.MajorMinor(current.Major(), current.Minor())
	want := changedOn(version.MustParse(baseline), current)
	b, err := os.ReadFile(featuresDoc)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			if _, dup := got[m[1]]; dup {
				t.Errorf("%s: %s has two rows", featuresDoc, m[1])
			}
			got[m[1]] = m[2]
		}
	}
	var missing []string
	for name, spec := range want {
		stage, ok := got[name]
		switch {
		case !ok:
			missing = append(missing, name+" ("+stageName(spec)+")")
		case stage != stageName(spec):
			t.Errorf("%s: %s is %s in %s, the table says %s", featuresDoc, name, stageName(spec), current, stage)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s: no row for %s, on by default in %s and not in %s", featuresDoc, m, current, baseline)
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: row for %s, which is not a gate that %s turned on since %s", featuresDoc, name, current, baseline)
		}
	}
}

// stageName is a stage as the table writes it.
func stageName(s featuregate.FeatureSpec) string {
	switch s.PreRelease {
	case featuregate.GA:
		return "GA"
	case featuregate.Beta:
		return "Beta"
	}
	return string(s.PreRelease)
}

// currentRelease is the k8s.io/kubernetes version this module requires.
func currentRelease(t *testing.T) string {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "k8s.io/kubernetes" {
			return f[1]
		}
	}
	t.Fatal("go.mod requires no k8s.io/kubernetes")
	return ""
}
