package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// statusField returns the value of one line ("CapEff", "NoNewPrivs" ...)
// of a /proc/<pid>/status text.
func statusField(status, name string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestContainerSecurityContext_G15_G16 checks each container field from
// inside its container, against the real runtime: capabilities, IDs and
// groups, a read-only root, no_new_privs, seccomp, the masked /proc paths,
// privileged mode (all capabilities, the host's devices, nothing masked)
// and the pod's safe sysctls.
func TestContainerSecurityContext_G15_G16(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "secctx.yaml", podSpec("secctx", []string{
		"terminationGracePeriodSeconds: 2",
		"securityContext: {fsGroup: 2000, supplementalGroups: [4000], sysctls: [{name: kernel.shm_rmid_forced, value: '1'}, {name: net/ipv4/ip_local_port_range, value: '20000 30000'}]}",
	}, nil, []string{
		sleeper("caps", "securityContext: {capabilities: {add: [NET_ADMIN], drop: [ALL]}}"),
		sleeper("ids", "securityContext: {runAsUser: 1000, runAsGroup: 3000}"),
		sleeper("ro", "securityContext: {readOnlyRootFilesystem: true}"),
		sleeper("locked", "securityContext: {allowPrivilegeEscalation: false, seccompProfile: {type: RuntimeDefault}}"),
		sleeper("plain"),
		sleeper("priv", "securityContext: {privileged: true}"),
	}))
	p := e.WaitForPod(t, PodName("secctx"), runningAndReady, podStartTimeout)
	status := func(name string) string {
		return e.Exec(t, e.PodContainer(t, p.Name, name).ID, "cat", "/proc/self/status")
	}

	if got := statusField(status("caps"), "CapEff"); got != "0000000000001000" {
		t.Errorf("caps: CapEff %s, want only NET_ADMIN (0000000000001000)", got)
	}
	ids := status("ids")
	if uid, gid := statusField(ids, "Uid"), statusField(ids, "Gid"); !strings.HasPrefix(uid, "1000\t") || !strings.HasPrefix(gid, "3000\t") {
		t.Errorf("ids: Uid %q Gid %q, want 1000 and 3000", uid, gid)
	}
	if groups := strings.Fields(statusField(ids, "Groups")); !slices.Contains(groups, "2000") || !slices.Contains(groups, "4000") {
		t.Errorf("ids: groups %v, want fsGroup 2000 and supplemental group 4000", groups)
	}
	ro := e.PodContainer(t, p.Name, "ro").ID
	if out := e.Exec(t, ro, "sh", "-c", "touch /written 2>&1; true"); !strings.Contains(out, "Read-only file system") {
		t.Errorf("ro: writing to / gave %q, want EROFS", out)
	}
	locked, plain := status("locked"), status("plain")
	if nnp, sc := statusField(locked, "NoNewPrivs"), statusField(locked, "Seccomp"); nnp != "1" || sc != "2" {
		t.Errorf("locked: NoNewPrivs %s Seccomp %s, want 1 and 2 (filter)", nnp, sc)
	}
	if nnp, sc := statusField(plain, "NoNewPrivs"), statusField(plain, "Seccomp"); nnp != "0" || sc != "0" {
		t.Errorf("plain: NoNewPrivs %s Seccomp %s, want 0 and 0 (the kubelet's defaults)", nnp, sc)
	}
	plainMounts := e.Exec(t, e.PodContainer(t, p.Name, "plain").ID, "cat", "/proc/self/mountinfo")
	for _, path := range []string{" /proc/keys ", " /proc/sys ro,", " /sys/firmware "} {
		if !strings.Contains(plainMounts, path) {
			t.Errorf("plain: %s is not masked or read-only (mountinfo:\n%s)", path, plainMounts)
		}
	}

	// Privileged: every capability the host's root has, the host's
	// devices, nothing masked.
	host, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	priv := e.PodContainer(t, p.Name, "priv").ID
	if got, want := statusField(status("priv"), "CapEff"), statusField(string(host), "CapEff"); got != want {
		t.Errorf("priv: CapEff %s, want the host root's %s", got, want)
	}
	if out := e.Exec(t, priv, "sh", "-c", "test -c /dev/kmsg && echo yes; true"); strings.TrimSpace(out) != "yes" {
		t.Errorf("priv: no /dev/kmsg, want the host's devices")
	}
	if m := e.Exec(t, priv, "cat", "/proc/self/mountinfo"); strings.Contains(m, " /proc/keys ") {
		t.Errorf("priv: /proc/keys is masked in a privileged container")
	}

	if out := e.Exec(t, ro, "cat", "/proc/sys/net/ipv4/ip_local_port_range", "/proc/sys/kernel/shm_rmid_forced"); strings.Join(strings.Fields(out), " ") != "20000 30000 1" {
		t.Errorf("sysctls in the pod: %q, want 20000 30000 and 1", out)
	}
}

// TestPodNamespaces_G15: with shareProcessNamespace PID 1 of every
// container is the pause process and the containers see each other; with
// hostPID a container sees the host's PID 1.
func TestPodNamespaces_G15(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "sharedpid.yaml", podSpec("sharedpid", []string{"terminationGracePeriodSeconds: 2", "shareProcessNamespace: true"}, nil, []string{
		sleeper("a"), container("b", busyboxImage, []string{"sh", "-c", "exec sleep 3600"}, nil),
	}))
	e.WriteManifest(t, "hostpid.yaml", podSpec("hostpid", []string{"terminationGracePeriodSeconds: 2", "hostPID: true", "hostIPC: true"}, nil, []string{sleeper("app")}))
	shared := e.WaitForPod(t, PodName("sharedpid"), runningAndReady, podStartTimeout)
	a := e.PodContainer(t, shared.Name, "a").ID
	if pid1 := e.Exec(t, a, "cat", "/proc/1/cmdline"); !strings.Contains(pid1, "pause") {
		t.Errorf("shared PID namespace: PID 1 is %q, want the pause process", pid1)
	}
	if all := e.Exec(t, a, "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"); !strings.Contains(all, "sleep 3600") {
		t.Errorf("shared PID namespace: container a does not see b's process: %q", all)
	}

	hp := e.WaitForPod(t, PodName("hostpid"), runningAndReady, podStartTimeout)
	app := e.PodContainer(t, hp.Name, "app").ID
	want, err := os.ReadFile("/proc/1/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Exec(t, app, "cat", "/proc/1/cmdline"); got != string(want) {
		t.Errorf("hostPID: PID 1 is %q, want the host's %q", got, want)
	}
	hostIPC, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(e.Exec(t, app, "readlink", "/proc/self/ns/ipc")); got != hostIPC {
		t.Errorf("hostIPC: IPC namespace %s, want the host's %s", got, hostIPC)
	}
}

// TestSecurityAdmissionAndChecks_G15: unsafe sysctls are refused unless
// --allowed-unsafe-sysctls allows them; runAsNonRoot with a root image
// waits with the kubelet's CreateContainerConfigError; an AppArmor profile
// on a host without AppArmor is rejected; a Localhost seccomp profile is
// read from <root-dir>/seccomp.
func TestSecurityAdmissionAndChecks_G15(t *testing.T) {
	e := NewEnv(t)
	profileDir := filepath.Join(e.s.Root, "seccomp", "e2e")
	if err := os.MkdirAll(profileDir, 0o755); err != nil {
		t.Fatal(err)
	}
	profile := `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}`
	if err := os.WriteFile(filepath.Join(profileDir, "no-mkdir.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	e.StartAgent(t, AgentOptions{Args: []string{"--allowed-unsafe-sysctls=net.core.somaxconn"}})
	grace := "terminationGracePeriodSeconds: 2"
	e.WriteManifest(t, "unsafe.yaml", podSpec("unsafe", []string{grace, "securityContext: {sysctls: [{name: kernel.msgmax, value: '9000'}]}"}, nil, []string{sleeper("app")}))
	e.WriteManifest(t, "allowed.yaml", podSpec("allowed", []string{grace, "securityContext: {sysctls: [{name: net.core.somaxconn, value: '1234'}]}"}, nil, []string{
		sleeper("app", "securityContext: {seccompProfile: {type: Localhost, localhostProfile: e2e/no-mkdir.json}}"),
	}))
	e.WriteManifest(t, "nonroot.yaml", podSpec("nonroot", []string{grace, "securityContext: {runAsNonRoot: true}"}, nil, []string{sleeper("app")}))
	e.WriteManifest(t, "apparmor.yaml", podSpec("apparmor", []string{grace}, nil, []string{
		sleeper("app", "securityContext: {appArmorProfile: {type: RuntimeDefault}}"),
	}))

	p := e.WaitForPod(t, PodName("unsafe"), phaseIs(v1.PodFailed), podStartTimeout)
	if p.Status.Reason != "SysctlForbidden" || p.Status.Message != `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted` {
		t.Errorf("unsafe sysctl: reason %q message %q", p.Status.Reason, p.Status.Message)
	}

	p = e.WaitForPod(t, PodName("allowed"), runningAndReady, podStartTimeout)
	app := e.PodContainer(t, p.Name, "app").ID
	if got := strings.TrimSpace(e.Exec(t, app, "cat", "/proc/sys/net/core/somaxconn")); got != "1234" {
		t.Errorf("allowed unsafe sysctl: somaxconn %s, want 1234", got)
	}
	if out := e.Exec(t, app, "sh", "-c", "mkdir /tmp/d 2>&1; true"); !strings.Contains(out, "Operation not permitted") {
		t.Errorf("Localhost seccomp profile: mkdir gave %q, want EPERM", out)
	}

	p = e.WaitForPod(t, PodName("nonroot"), containerCond("app", waitingReason("CreateContainerConfigError")), podStartTimeout)
	wantMsg := fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: app)", kubeletPodDesc(p))
	if w := statusOf(t, p, "app").State.Waiting; w.Message != wantMsg {
		t.Errorf("runAsNonRoot: message %q, want %q", w.Message, wantMsg)
	}

	if _, err := os.Stat("/sys/kernel/security/apparmor"); err == nil {
		t.Skip("the host has AppArmor: the rejection of an AppArmor profile on a host without it cannot be checked here")
	}
	p = e.WaitForPod(t, PodName("apparmor"), phaseIs(v1.PodFailed), podStartTimeout)
	if p.Status.Reason != "AppArmor" || p.Status.Message != "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host" {
		t.Errorf("AppArmor: reason %q message %q", p.Status.Reason, p.Status.Message)
	}
}

// TestVolumeOwnershipFSGroup_G15 checks fsGroup's volume ownership from
// inside a container running as user 1000 with fsGroup 2000: the emptyDir
// has group 2000 and setgid, the user can create a file there (which
// inherits group 2000), and the configMap's file (mode 0600) has group
// 2000 and is readable by it.
func TestVolumeOwnershipFSGroup_G15(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned-config\ndata:\n  app.conf: owned\n---\n"
	e.WriteManifest(t, "owned.yaml", cm+podSpec("owned", []string{
		"terminationGracePeriodSeconds: 2",
		"securityContext: {runAsUser: 1000, fsGroup: 2000, fsGroupChangePolicy: OnRootMismatch}",
		"volumes: [{name: scratch, emptyDir: {}}, {name: cfg, configMap: {name: owned-config, defaultMode: 0600}}]",
	}, nil, []string{
		sleeper("app", "volumeMounts: [{name: scratch, mountPath: /scratch}, {name: cfg, mountPath: /cfg}]"),
	}))
	p := e.WaitForPod(t, PodName("owned"), runningAndReady, podStartTimeout)
	app := e.PodContainer(t, p.Name, "app").ID
	script := `stat -c '%g %A' /scratch; touch /scratch/new && stat -c '%g' /scratch/new; ` +
		`stat -L -c '%g %A' /cfg/app.conf; cat /cfg/app.conf; echo; id -u`
	want := "2000 drwxrwsrwx\n2000\n2000 -rw-r-----\nowned\n1000\n"
	if got := e.Exec(t, app, "sh", "-c", script); got != want {
		t.Errorf("ownership seen from the container:\n%s\nwant:\n%s", got, want)
	}
}
