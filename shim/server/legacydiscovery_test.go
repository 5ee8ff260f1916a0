package server

import (
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMergeGroups: the shim's groups as they are, the delegate's missing
// ones appended with their versions in order (the first preferred) and
// the shim's server addresses.
func TestMergeGroups(t *testing.T) {
	addrs := []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "127.0.0.1:6443"}}
	apps := metav1.APIGroup{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "apps/v1", Version: "v1"}},
		PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}, ServerAddressByClientCIDRs: addrs}
	own := metav1.APIGroupList{Groups: []metav1.APIGroup{apps}}
	all := apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{
		{ObjectMeta: metav1.ObjectMeta{Name: "apps"}, Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com"}, Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v2"}, {Version: "v1"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "empty.example.com"}},
	}}
	got := mergeGroups(own, all)
	if got.Kind != "APIGroupList" || len(got.Groups) != 2 || got.Groups[0].Name != "apps" {
		t.Fatalf("groups %+v, want apps then example.com", got.Groups)
	}
	ex := got.Groups[1]
	if ex.Name != "example.com" || len(ex.Versions) != 2 || ex.Versions[1].GroupVersion != "example.com/v1" ||
		ex.PreferredVersion.GroupVersion != "example.com/v2" || len(ex.ServerAddressByClientCIDRs) != 1 {
		t.Errorf("example.com: %+v", ex)
	}
}
