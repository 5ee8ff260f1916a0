package cri

import (
	"reflect"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// TestFeaturesFromStatus: the default handler ("") decides the per-handler
// features; a runtime that lists no handlers (containerd 1.x) has none.
func TestFeaturesFromStatus(t *testing.T) {
	tests := []struct {
		name string
		st   *runtimeapi.StatusResponse
		want runtime.Features
	}{
		{"containerd 1.6: no handlers, no features", &runtimeapi.StatusResponse{}, runtime.Features{}},
		{"containerd 2.4 with runc 1.5", &runtimeapi.StatusResponse{
			Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
			RuntimeHandlers: []*runtimeapi.RuntimeHandler{
				{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true, RecursiveReadOnlyMounts: true}},
				{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true, RecursiveReadOnlyMounts: true}},
			},
		}, runtime.Features{UserNamespaces: true, RecursiveReadOnlyMounts: true, SupplementalGroupsPolicy: true, Reported: true,
			Handlers: []runtime.Handler{{Name: "", UserNamespaces: true, RecursiveReadOnlyMounts: true}, {Name: "runc", UserNamespaces: true, RecursiveReadOnlyMounts: true}}}},
		{"only a named handler has them", &runtimeapi.StatusResponse{
			RuntimeHandlers: []*runtimeapi.RuntimeHandler{
				{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{}},
				{Name: "kata", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
			},
		}, runtime.Features{Handlers: []runtime.Handler{{Name: ""}, {Name: "kata", UserNamespaces: true}}}},
	}
	for _, tt := range tests {
		if got := featuresFromStatus(tt.st); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	tests := []struct {
		name, version string
		want          bool
	}{
		{"containerd", "v2.4.2", true},
		{"containerd", "v2.1.0", true},
		{"containerd", "2.1.0-rc.1", true},
		{"containerd", "v2.0.5", false},
		{"containerd", "1.6.20~ds1", false},
		{"containerd", "v3.0.0", true},
		{"cri-o", "1.31.0", true},
		{"cri-o", "1.30.4", false},
		{"other", "v9.9.9", false},
		{"containerd", "garbage", false},
	}
	for _, tt := range tests {
		if got := versionAtLeast(tt.name, tt.version, imageVolumeSince); got != tt.want {
			t.Errorf("%s %s: %v, want %v", tt.name, tt.version, got, tt.want)
		}
	}
}

// TestUserNamespaceToCRI: a pod's own user namespace goes to the sandbox
// and to each container (mode POD, one mapping for UIDs and GIDs), and
// every mount is idmapped to it; without one nothing is set.
func TestUserNamespaceToCRI(t *testing.T) {
	m := &runtime.IDMapping{HostID: 65536 * 3, ContainerID: 0, Length: 65536}
	sb := &runtime.SandboxSpec{Name: "p", Namespace: "ns", UID: "u", Security: &runtime.SandboxSecurity{UserNamespace: m}}
	want := []*runtimeapi.IDMapping{{HostId: 65536 * 3, ContainerId: 0, Length: 65536}}
	check := func(what string, u *runtimeapi.UserNamespace) {
		t.Helper()
		if u.GetMode() != runtimeapi.NamespaceMode_POD || len(u.GetUids()) != 1 || len(u.GetGids()) != 1 ||
			u.GetUids()[0].String() != want[0].String() || u.GetGids()[0].String() != want[0].String() {
			t.Errorf("%s: userns %v, want mode POD with %v", what, u, want)
		}
	}
	check("sandbox", sandboxConfig(sb).GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions())
	cfg := containerConfig(&runtime.ContainerSpec{Name: "c", Mounts: []runtime.Mount{{HostPath: "/h", ContainerPath: "/c"}}}, sb)
	check("container", cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions())
	if mt := cfg.GetMounts()[0]; len(mt.GetUidMappings()) != 1 || mt.GetUidMappings()[0].String() != want[0].String() || len(mt.GetGidMappings()) != 1 {
		t.Errorf("mount mappings %v / %v, want %v", mt.GetUidMappings(), mt.GetGidMappings(), want)
	}

	sb.Security.UserNamespace = nil
	if u := sandboxConfig(sb).GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); u != nil {
		t.Errorf("no user namespace: sandbox userns %v", u)
	}
	cfg = containerConfig(&runtime.ContainerSpec{Name: "c", Mounts: []runtime.Mount{{HostPath: "/h", ContainerPath: "/c"}}}, sb)
	if mt := cfg.GetMounts()[0]; mt.GetUidMappings() != nil || mt.GetGidMappings() != nil {
		t.Errorf("no user namespace: mount mappings %v / %v", mt.GetUidMappings(), mt.GetGidMappings())
	}
}

// TestSupplementalGroupsPolicyToCRI: Strict goes to the sandbox and the
// container; without it CRI's default, Merge.
func TestSupplementalGroupsPolicyToCRI(t *testing.T) {
	for _, strict := range []bool{false, true} {
		want := runtimeapi.SupplementalGroupsPolicy_Merge
		if strict {
			want = runtimeapi.SupplementalGroupsPolicy_Strict
		}
		sb := &runtime.SandboxSpec{Name: "p", Security: &runtime.SandboxSecurity{SupplementalGroups: []int64{5}, StrictGroups: strict}}
		if got := sandboxConfig(sb).GetLinux().GetSecurityContext().GetSupplementalGroupsPolicy(); got != want {
			t.Errorf("strict=%v: sandbox policy %v, want %v", strict, got, want)
		}
		c := containerConfig(&runtime.ContainerSpec{Name: "c", Security: &runtime.ContainerSecurity{StrictGroups: strict}}, sb)
		if got := c.GetLinux().GetSecurityContext().GetSupplementalGroupsPolicy(); got != want {
			t.Errorf("strict=%v: container policy %v, want %v", strict, got, want)
		}
	}
}
