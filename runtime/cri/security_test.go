package cri

import (
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// TestSandboxSecurityToCRI_G15 checks the pod-level security context in
// the sandbox config and the namespace modes its containers get.
func TestSandboxSecurityToCRI_G15(t *testing.T) {
	uid, gid := int64(1000), int64(3000)
	full := &runtime.SandboxSecurity{
		SharePID: true, RunAsUser: &uid, RunAsGroup: &gid,
		SupplementalGroups: []int64{2000, 4000},
		Sysctls:            map[string]string{"net.ipv4.tcp_syncookies": "0"},
		Seccomp:            &runtime.SecurityProfile{Type: runtime.ProfileRuntimeDefault},
		SELinux:            &runtime.SELinuxOptions{Level: "s0:c1,c2"},
	}
	for _, tc := range []struct {
		name     string
		sec      *runtime.SandboxSecurity
		wantPID  runtimeapi.NamespaceMode
		wantIPC  runtimeapi.NamespaceMode
		wantSC   *runtimeapi.LinuxSandboxSecurityContext // without NamespaceOptions
		wantSysc map[string]string
	}{
		{name: "none", wantPID: runtimeapi.NamespaceMode_CONTAINER, wantIPC: runtimeapi.NamespaceMode_POD,
			wantSC: &runtimeapi.LinuxSandboxSecurityContext{}},
		{name: "hostPID and hostIPC", sec: &runtime.SandboxSecurity{HostPID: true, HostIPC: true, SharePID: true},
			wantPID: runtimeapi.NamespaceMode_NODE, wantIPC: runtimeapi.NamespaceMode_NODE,
			wantSC: &runtimeapi.LinuxSandboxSecurityContext{}},
		{name: "shared PID, IDs, sysctls, profiles", sec: full,
			wantPID: runtimeapi.NamespaceMode_POD, wantIPC: runtimeapi.NamespaceMode_POD,
			wantSC: &runtimeapi.LinuxSandboxSecurityContext{
				RunAsUser: &runtimeapi.Int64Value{Value: 1000}, RunAsGroup: &runtimeapi.Int64Value{Value: 3000},
				SupplementalGroups: []int64{2000, 4000},
				Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
				SelinuxOptions:     &runtimeapi.SELinuxOption{Level: "s0:c1,c2"},
			},
			wantSysc: map[string]string{"net.ipv4.tcp_syncookies": "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSandboxSpec(false)
			spec.Privileged = false
			spec.Security = tc.sec
			cfg := sandboxConfig(spec)
			sc := proto.Clone(cfg.Linux.SecurityContext).(*runtimeapi.LinuxSandboxSecurityContext)
			ns := sc.NamespaceOptions
			sc.NamespaceOptions = nil
			if ns.Pid != tc.wantPID || ns.Ipc != tc.wantIPC || ns.Network != runtimeapi.NamespaceMode_POD {
				t.Errorf("namespaces = %v, want pid %v ipc %v", ns, tc.wantPID, tc.wantIPC)
			}
			if !proto.Equal(sc, tc.wantSC) {
				t.Errorf("security context\n got %v\nwant %v", sc, tc.wantSC)
			}
			if !mapsEqual(cfg.Linux.Sysctls, tc.wantSysc) {
				t.Errorf("sysctls = %v, want %v", cfg.Linux.Sysctls, tc.wantSysc)
			}
			// Containers follow the sandbox's namespaces.
			cc := containerConfig(&runtime.ContainerSpec{Name: "c"}, spec)
			if got := cc.Linux.SecurityContext.NamespaceOptions; !proto.Equal(got, ns) {
				t.Errorf("container namespaces = %v, want %v", got, ns)
			}
		})
	}
}

// TestContainerSecurityToCRI_G15 checks each container field's CRI form.
func TestContainerSecurityToCRI_G15(t *testing.T) {
	fsGroup := int64(2000)
	sec := &runtime.ContainerSecurity{
		CapAdd: []string{"NET_ADMIN"}, CapDrop: []string{"ALL"},
		ReadOnlyRootfs: true, NoNewPrivs: true,
		SupplementalGroups: []int64{2000, 5}, FSGroup: &fsGroup,
		MaskedPaths: []string{"/proc/kcore"}, ReadonlyPaths: []string{"/proc/sys"},
		Seccomp:  &runtime.SecurityProfile{Type: runtime.ProfileLocalhost, LocalhostRef: "/var/lib/skiff/seccomp/p.json"},
		AppArmor: &runtime.SecurityProfile{Type: runtime.ProfileRuntimeDefault},
		SELinux:  &runtime.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "l"},
	}
	sb := testSandboxSpec(false)
	got := containerConfig(&runtime.ContainerSpec{Name: "c", Security: sec}, sb).Linux.SecurityContext
	want := &runtimeapi.LinuxContainerSecurityContext{
		Capabilities:     &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}},
		NamespaceOptions: namespaceOptions(sb),
		ReadonlyRootfs:   true, NoNewPrivs: true,
		SupplementalGroups: []int64{2000, 5},
		MaskedPaths:        []string{"/proc/kcore"}, ReadonlyPaths: []string{"/proc/sys"},
		Seccomp:         &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/skiff/seccomp/p.json"},
		Apparmor:        &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		ApparmorProfile: "runtime/default", //nolint:staticcheck // the deprecated form is sent too
		SelinuxOptions:  &runtimeapi.SELinuxOption{User: "u", Role: "r", Type: "t", Level: "l"},
	}
	if !proto.Equal(got, want) {
		t.Errorf("security context\n got %v\nwant %v", got, want)
	}
	for _, tc := range []struct {
		p        *runtime.SecurityProfile
		want     *runtimeapi.SecurityProfile
		wantName string
	}{
		{nil, nil, ""},
		{&runtime.SecurityProfile{}, &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, "unconfined"},
		{&runtime.SecurityProfile{Type: runtime.ProfileLocalhost, LocalhostRef: "k8s-x"},
			&runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-x"}, "localhost/k8s-x"},
	} {
		if got := profileToCRI(tc.p); !proto.Equal(got, tc.want) {
			t.Errorf("profileToCRI(%v) = %v, want %v", tc.p, got, tc.want)
		}
		if got := deprecatedAppArmorName(tc.p); got != tc.wantName {
			t.Errorf("deprecatedAppArmorName(%v) = %q, want %q", tc.p, got, tc.wantName)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
