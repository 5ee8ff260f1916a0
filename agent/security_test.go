package agent

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

func ptrTo[T any](v T) *T { return &v }

// secPod is a one-container pod with a pod-level security context.
func secPod(mutate func(p *v1.Pod, c *v1.SecurityContext)) *v1.Pod {
	p := testPod(v1.RestartPolicyAlways, nil, "app")
	p.Spec.SecurityContext = &v1.PodSecurityContext{}
	sc := &v1.SecurityContext{}
	mutate(p, sc)
	if !reflect.DeepEqual(sc, &v1.SecurityContext{}) {
		p.Spec.Containers[0].SecurityContext = sc
	}
	return p
}

func TestSandboxSecurity_G15(t *testing.T) {
	runtimeDefault := &runtime.SecurityProfile{Type: runtime.ProfileRuntimeDefault}
	tests := []struct {
		name string
		pod  *v1.Pod
		want *runtime.SandboxSecurity
	}{
		{"defaults: the sandbox runs with the runtime's seccomp profile",
			testPod(v1.RestartPolicyAlways, nil, "app"),
			&runtime.SandboxSecurity{Seccomp: runtimeDefault}},
		{"host namespaces", secPod(func(p *v1.Pod, _ *v1.SecurityContext) { p.Spec.HostPID, p.Spec.HostIPC = true, true }),
			&runtime.SandboxSecurity{HostPID: true, HostIPC: true, Seccomp: runtimeDefault}},
		{"shared PID namespace", secPod(func(p *v1.Pod, _ *v1.SecurityContext) { p.Spec.ShareProcessNamespace = ptrTo(true) }),
			&runtime.SandboxSecurity{SharePID: true, Seccomp: runtimeDefault}},
		{"IDs, fsGroup first, sysctls with dots, SELinux", secPod(func(p *v1.Pod, _ *v1.SecurityContext) {
			psc := p.Spec.SecurityContext
			psc.RunAsUser, psc.RunAsGroup, psc.FSGroup = ptrTo(int64(1000)), ptrTo(int64(3000)), ptrTo(int64(2000))
			psc.SupplementalGroups = []int64{4000, 5000}
			psc.Sysctls = []v1.Sysctl{{Name: "net/ipv4/ip_local_port_range", Value: "20000 30000"}, {Name: "kernel.shm_rmid_forced", Value: "1"}}
			psc.SELinuxOptions = &v1.SELinuxOptions{Level: "s0:c1"}
			psc.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined} // the containers', not the sandbox's
		}), &runtime.SandboxSecurity{
			RunAsUser: ptrTo(int64(1000)), RunAsGroup: ptrTo(int64(3000)),
			SupplementalGroups: []int64{2000, 4000, 5000},
			Sysctls:            map[string]string{"net.ipv4.ip_local_port_range": "20000 30000", "kernel.shm_rmid_forced": "1"},
			Seccomp:            runtimeDefault,
			SELinux:            &runtime.SELinuxOptions{Level: "s0:c1"},
		}},
		{"supplementalGroupsPolicy Strict", secPod(func(p *v1.Pod, _ *v1.SecurityContext) {
			p.Spec.SecurityContext.SupplementalGroupsPolicy = ptrTo(v1.SupplementalGroupsPolicyStrict)
		}), &runtime.SandboxSecurity{StrictGroups: true, Seccomp: runtimeDefault}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sandboxSecurity(tt.pod); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sandboxSecurity =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestContainerSecurity_G15(t *testing.T) {
	unconfined := &runtime.SecurityProfile{Type: runtime.ProfileUnconfined}
	runtimeDefault := &runtime.SecurityProfile{Type: runtime.ProfileRuntimeDefault}
	base := func() *runtime.ContainerSecurity {
		return &runtime.ContainerSecurity{MaskedPaths: defaultMaskedPaths, ReadonlyPaths: defaultReadonlyPaths, Seccomp: unconfined}
	}
	with := func(f func(s *runtime.ContainerSecurity)) *runtime.ContainerSecurity {
		s := base()
		f(s)
		return s
	}
	tests := []struct {
		name string
		cfg  SecurityConfig
		pod  *v1.Pod
		want *runtime.ContainerSecurity
	}{
		{"defaults: masked paths, unconfined seccomp, escalation allowed",
			SecurityConfig{}, secPod(func(*v1.Pod, *v1.SecurityContext) {}), base()},
		{"--seccomp-default", SecurityConfig{SeccompDefault: true}, secPod(func(*v1.Pod, *v1.SecurityContext) {}),
			with(func(s *runtime.ContainerSecurity) { s.Seccomp = runtimeDefault })},
		{"pod seccomp inherited", SecurityConfig{}, secPod(func(p *v1.Pod, _ *v1.SecurityContext) {
			p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
		}), with(func(s *runtime.ContainerSecurity) { s.Seccomp = runtimeDefault })},
		{"container seccomp wins, Localhost under the profile root", SecurityConfig{SeccompProfileRoot: "/var/lib/skiff/seccomp", SeccompDefault: true},
			secPod(func(p *v1.Pod, c *v1.SecurityContext) {
				p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
				c.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptrTo("profiles/audit.json")}
			}), with(func(s *runtime.ContainerSecurity) {
				s.Seccomp = &runtime.SecurityProfile{Type: runtime.ProfileLocalhost, LocalhostRef: "/var/lib/skiff/seccomp/profiles/audit.json"}
			})},
		{"container Unconfined beats --seccomp-default", SecurityConfig{SeccompDefault: true}, secPod(func(_ *v1.Pod, c *v1.SecurityContext) {
			c.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}
		}), base()},
		{"capabilities without CAP_, read-only root, no escalation", SecurityConfig{}, secPod(func(_ *v1.Pod, c *v1.SecurityContext) {
			c.Capabilities = &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN", "CAP_SYS_TIME", "cap_net_raw"}, Drop: []v1.Capability{"ALL"}}
			c.ReadOnlyRootFilesystem, c.AllowPrivilegeEscalation = ptrTo(true), ptrTo(false)
		}), with(func(s *runtime.ContainerSecurity) {
			s.CapAdd, s.CapDrop = []string{"NET_ADMIN", "SYS_TIME", "net_raw"}, []string{"ALL"}
			s.ReadOnlyRootfs, s.NoNewPrivs = true, true
		})},
		{"escalation explicitly allowed", SecurityConfig{}, secPod(func(_ *v1.Pod, c *v1.SecurityContext) {
			c.AllowPrivilegeEscalation, c.ReadOnlyRootFilesystem = ptrTo(true), ptrTo(false)
		}), base()},
		{"procMount Unmasked clears the paths", SecurityConfig{}, secPod(func(_ *v1.Pod, c *v1.SecurityContext) {
			c.ProcMount = ptrTo(v1.UnmaskedProcMount)
		}), with(func(s *runtime.ContainerSecurity) { s.MaskedPaths, s.ReadonlyPaths = []string{}, []string{} })},
		{"fsGroup and supplementalGroups, SELinux: container wins", SecurityConfig{}, secPod(func(p *v1.Pod, c *v1.SecurityContext) {
			p.Spec.SecurityContext.FSGroup = ptrTo(int64(2000))
			p.Spec.SecurityContext.SupplementalGroups = []int64{4000}
			p.Spec.SecurityContext.SELinuxOptions = &v1.SELinuxOptions{Level: "s0:c1"}
			c.SELinuxOptions = &v1.SELinuxOptions{Type: "spc_t"}
		}), with(func(s *runtime.ContainerSecurity) {
			s.SupplementalGroups, s.FSGroup = []int64{2000, 4000}, ptrTo(int64(2000))
			s.SELinux = &runtime.SELinuxOptions{Type: "spc_t"}
		})},
		{"supplementalGroupsPolicy Strict", SecurityConfig{}, secPod(func(p *v1.Pod, _ *v1.SecurityContext) {
			p.Spec.SecurityContext.SupplementalGroupsPolicy = ptrTo(v1.SupplementalGroupsPolicyStrict)
		}), with(func(s *runtime.ContainerSecurity) { s.StrictGroups = true })},
		{"AppArmor: pod field", SecurityConfig{}, secPod(func(p *v1.Pod, _ *v1.SecurityContext) {
			p.Spec.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		}), with(func(s *runtime.ContainerSecurity) { s.AppArmor = runtimeDefault })},
		{"AppArmor: beta annotation", SecurityConfig{}, secPod(func(p *v1.Pod, _ *v1.SecurityContext) {
			p.Annotations = map[string]string{appArmorAnnotationPrefix + "app": "localhost/k8s-deny"}
		}), with(func(s *runtime.ContainerSecurity) {
			s.AppArmor = &runtime.SecurityProfile{Type: runtime.ProfileLocalhost, LocalhostRef: "k8s-deny"}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newSecurityPolicy(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := p.containerSecurity(tt.pod, &tt.pod.Spec.Containers[0])
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("containerSecurity =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// userImages reports every image with the given USER.
type userImages struct {
	*fake.Runtime
	user string
}

func (u userImages) ImageStatus(ctx context.Context, ref string) (*runtime.Image, error) {
	img, err := u.Runtime.ImageStatus(ctx, ref)
	if err == nil {
		img.User = u.user
	}
	return img, err
}

func TestRunAsNonRoot_G15(t *testing.T) {
	const desc = `(pod: "web-node_default(uid1)", container: app)`
	tests := []struct {
		name      string
		podNR     *bool
		ctrNR     *bool
		runAsUser *int64
		imageUser string
		want      string // error; "" none
	}{
		{"not asked", nil, nil, nil, "", ""},
		{"container false beats pod true", ptrTo(true), ptrTo(false), nil, "", ""},
		{"runAsUser 0", ptrTo(true), nil, ptrTo(int64(0)), "", "container's runAsUser breaks non-root policy " + desc},
		{"runAsUser 1000", ptrTo(true), nil, ptrTo(int64(1000)), "root", ""},
		{"image without USER runs as root", nil, ptrTo(true), nil, "", "container has runAsNonRoot and image will run as root " + desc},
		{"image USER 0:0", nil, ptrTo(true), nil, "0:0", "container has runAsNonRoot and image will run as root " + desc},
		{"image USER 1000:1000", nil, ptrTo(true), nil, "1000:1000", ""},
		{"image USER name", ptrTo(true), nil, nil, "nobody", "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root " + desc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := secPod(func(p *v1.Pod, c *v1.SecurityContext) {
				p.Spec.SecurityContext.RunAsNonRoot = tt.podNR
				c.RunAsNonRoot, c.RunAsUser = tt.ctrNR, tt.runAsUser
			})
			c := &pod.Spec.Containers[0]
			rt := fake.New(nil)
			rt.AddImage("img")
			spec, err := containerSpec(pod, c, 0, "sha256:img", nil, false, containerLimits{})
			if err != nil {
				t.Fatal(err)
			}
			err = (*securityPolicy)(nil).completeContainerSpec(context.Background(), userImages{rt, tt.imageUser}, pod, c, spec)
			got := ""
			if err != nil {
				got = err.Error()
				if startFailureReason(err) != reasonCreateContainerConfigError {
					t.Errorf("waiting reason %q, want %s", startFailureReason(err), reasonCreateContainerConfigError)
				}
			}
			if got != tt.want {
				t.Errorf("error = %q\nwant    %q", got, tt.want)
			}
			if spec.Security == nil {
				t.Error("spec.Security not set")
			}
		})
	}
}

// TestRunAsNonRootWaits_G15: a container that would run as root under
// runAsNonRoot waits with CreateContainerConfigError and is never created.
func TestRunAsNonRootWaits_G15(t *testing.T) {
	rt := newFakeRuntime()
	h := runTestAgent(t, testConfig(t, userImages{rt, ""}))
	h.rt = rt
	pod := secPod(func(p *v1.Pod, _ *v1.SecurityContext) { p.Spec.SecurityContext.RunAsNonRoot = ptrTo(true) })
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("CreateContainerConfigError", func() bool {
		p := h.pod("uid1")
		w := (*v1.ContainerStateWaiting)(nil)
		if p != nil {
			w = containerWaiting(p, "app")
		}
		return w != nil && w.Reason == reasonCreateContainerConfigError &&
			strings.HasPrefix(w.Message, "container has runAsNonRoot and image will run as root")
	})
	for _, c := range rt.Calls() {
		if strings.HasPrefix(c, "CreateContainer") {
			t.Errorf("container created: %s", c)
		}
	}
}

func TestSysctlAdmission_G15(t *testing.T) {
	pod := func(hostNet, hostIPC bool, names ...string) *v1.Pod {
		p := secPod(func(p *v1.Pod, _ *v1.SecurityContext) { p.Spec.HostNetwork, p.Spec.HostIPC = hostNet, hostIPC })
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	tests := []struct {
		name   string
		cfg    SecurityConfig
		pod    *v1.Pod
		reject string // message after "forbidden sysctl: "; "" admitted
	}{
		{"no sysctls", SecurityConfig{}, testPod(v1.RestartPolicyAlways, nil, "app"), ""},
		{"safe ones", SecurityConfig{}, pod(false, false, "kernel.shm_rmid_forced", "net/ipv4/tcp_syncookies", "net.ipv4.tcp_rmem"), ""},
		{"unsafe", SecurityConfig{}, pod(false, false, "net.ipv4.tcp_syncookies", "net.core.somaxconn"), `"net.core.somaxconn" not allowlisted`},
		{"unsafe allowed by name", SecurityConfig{AllowedUnsafeSysctls: []string{"net.core.somaxconn"}}, pod(false, false, "net.core.somaxconn"), ""},
		{"unsafe allowed by prefix", SecurityConfig{AllowedUnsafeSysctls: []string{"kernel.msg*", "net.core.*"}}, pod(false, false, "kernel.msgmax", "net.core.somaxconn"), ""},
		{"prefix does not allow others", SecurityConfig{AllowedUnsafeSysctls: []string{"kernel.msg*"}}, pod(false, false, "kernel.sem"), `"kernel.sem" not allowlisted`},
		{"net with host network", SecurityConfig{}, pod(true, false, "net.ipv4.tcp_syncookies"), `"net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{"IPC with host IPC", SecurityConfig{AllowedUnsafeSysctls: []string{"kernel.sem"}}, pod(false, true, "kernel.sem"), `"kernel.sem" not allowed with host IPC enabled`},
		{"old kernel: tcp_rmem is not namespaced", SecurityConfig{KernelVersion: "4.14.300-1"}, pod(false, false, "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_rmem"), `"net.ipv4.tcp_rmem" not allowlisted`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newSecurityPolicy(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			f := p.sysctlFailure(tt.pod)
			switch {
			case tt.reject == "" && f != nil:
				t.Errorf("rejected: %+v", f)
			case tt.reject != "" && (f == nil || f.Reason != "SysctlForbidden" || f.Message != "Pod was rejected: forbidden sysctl: "+tt.reject):
				t.Errorf("failure %+v, want SysctlForbidden %q", f, tt.reject)
			}
		})
	}
	if f := (*securityPolicy)(nil).sysctlFailure(pod(false, false, "kernel.msgmax")); f == nil {
		t.Error("nil policy admitted an unsafe sysctl")
	}
	for _, bad := range []string{"vm.swappiness", "kernel.*", "Net.core.x", "net..x"} {
		if _, err := newSecurityPolicy(SecurityConfig{AllowedUnsafeSysctls: []string{bad}}); err == nil {
			t.Errorf("--allowed-unsafe-sysctls %s: want error", bad)
		}
	}
}

func TestAppArmorAdmission_G15(t *testing.T) {
	withProfile := func(typ v1.AppArmorProfileType) *v1.Pod {
		return secPod(func(_ *v1.Pod, c *v1.SecurityContext) { c.AppArmorProfile = &v1.AppArmorProfile{Type: typ} })
	}
	annotated := testPod(v1.RestartPolicyAlways, nil, "app")
	annotated.Annotations = map[string]string{appArmorAnnotationPrefix + "app": "runtime/default"}
	const msg = "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host"
	for _, tt := range []struct {
		name    string
		enabled bool
		pod     *v1.Pod
		reject  bool
	}{
		{"none asked", false, testPod(v1.RestartPolicyAlways, nil, "app"), false},
		{"unconfined", false, withProfile(v1.AppArmorProfileTypeUnconfined), false},
		{"runtime default without AppArmor", false, withProfile(v1.AppArmorProfileTypeRuntimeDefault), true},
		{"annotation without AppArmor", false, annotated, true},
		{"runtime default with AppArmor", true, withProfile(v1.AppArmorProfileTypeRuntimeDefault), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newSecurityPolicy(SecurityConfig{AppArmorEnabled: tt.enabled})
			f := p.appArmorFailure(tt.pod)
			if (f != nil) != tt.reject || f != nil && (f.Reason != "AppArmor" || f.Message != msg) {
				t.Errorf("failure %+v, want reject=%v", f, tt.reject)
			}
		})
	}
}

// TestSecurityAdmissionRejects_G15: a pod with an unsafe sysctl fails with
// SysctlForbidden and never gets a sandbox.
func TestSecurityAdmissionRejects_G15(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	pod := secPod(func(p *v1.Pod, _ *v1.SecurityContext) {
		p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}
	})
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Failed", func() bool { return h.phase("uid1") == v1.PodFailed })
	if p := h.pod("uid1"); p.Status.Reason != "SysctlForbidden" || p.Status.Message != `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted` {
		t.Errorf("status reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	for _, c := range rt.Calls() {
		if strings.HasPrefix(c, "RunSandbox") {
			t.Errorf("rejected pod got a sandbox: %s", c)
		}
	}
}
