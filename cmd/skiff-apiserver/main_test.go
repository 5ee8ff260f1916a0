package main

import (
	"testing"

	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// TestSetFeatureGates: the shim's defaults turn the gates off; a gate
// given explicitly wins over them; an unknown gate is an error.
func TestSetFeatureGates(t *testing.T) {
	if err := setFeatureGates(""); err != nil {
		t.Fatal(err)
	}
	for _, f := range []featuregate.Feature{features.ListFromCacheSnapshot, features.APIResponseCompression, features.WatchListCompression} {
		if utilfeature.DefaultFeatureGate.Enabled(f) {
			t.Errorf("%s on with the defaults", f)
		}
	}
	if err := setFeatureGates("APIResponseCompression=true"); err != nil {
		t.Fatal(err)
	}
	if !utilfeature.DefaultFeatureGate.Enabled(features.APIResponseCompression) {
		t.Error("APIResponseCompression=true given, still off")
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.ListFromCacheSnapshot) {
		t.Error("ListFromCacheSnapshot on after an unrelated gate was given")
	}
	if err := setFeatureGates("NoSuchGate=true"); err == nil {
		t.Error("an unknown gate was accepted")
	}
}
