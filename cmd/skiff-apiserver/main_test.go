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

// TestOptionsNameTheKubernetesService: with a node, the serving
// certificate names the kubernetes Service's cluster IP and its full
// name in the cluster domain, as in-cluster clients reach it.
func TestOptionsNameTheKubernetesService(t *testing.T) {
	fl := &flags{}
	fl.o.NodeName, fl.o.SecurePort = "n1", 6443
	fl.up.ServiceCIDR, fl.up.NodePortRange = "10.96.0.0/12", "30000-32767"
	fl.clusterDNS.zone = "cluster.local"
	o, err := fl.options()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.96.0.1", "kubernetes.default.svc.cluster.local"}
	if len(o.ExtraSANs) != 2 || o.ExtraSANs[0] != want[0] || o.ExtraSANs[1] != want[1] {
		t.Errorf("ExtraSANs %q, want %q", o.ExtraSANs, want)
	}
}
