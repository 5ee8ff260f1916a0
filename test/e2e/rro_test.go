package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// TestRecursiveReadOnlyMount: a read-only hostPath mount with
// recursiveReadOnly Enabled makes the mounts under it read-only too where
// the runtime supports it (containerd 2 with runc 1.5 on kernel 5.12+),
// while a plain read-only mount leaves them writable; on a runtime without
// it the container waits with the kubelet's CreateContainerConfigError.
func TestRecursiveReadOnlyMount(t *testing.T) {
	e := NewEnv(t)
	dir := filepath.Join(e.Dir, "rro")
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(sub, unix.MNT_DETACH) })
	e.StartAgent(t, AgentOptions{})
	features := e.RuntimeFeatures(t)
	e.WriteManifest(t, "rro.yaml", podSpec("rro", []string{
		"terminationGracePeriodSeconds: 2",
		"volumes: [{name: host, hostPath: {path: " + dir + "}}]",
	}, nil, []string{
		sleeper("rro", "volumeMounts: [{name: host, mountPath: /v, readOnly: true, recursiveReadOnly: Enabled}]"),
		sleeper("ro", "volumeMounts: [{name: host, mountPath: /v, readOnly: true}]"),
	}))
	if !features.RecursiveReadOnlyMounts {
		p := e.WaitForPod(t, PodName("rro"), containerCond("rro", waitingReason("CreateContainerConfigError")), podStartTimeout)
		if w := statusOf(t, p, "rro").State.Waiting; !strings.Contains(w.Message, `volume "host" requested recursive read-only mode, but it is not supported by the runtime`) {
			t.Errorf("on a runtime without recursive read-only mounts: %q", w.Message)
		}
		return
	}
	p := e.WaitForPod(t, PodName("rro"), runningAndReady, podStartTimeout)
	if out := e.Exec(t, e.PodContainer(t, p.Name, "rro").ID, "sh", "-c", "touch /v/sub/x 2>&1; true"); !strings.Contains(out, "Read-only file system") {
		t.Errorf("recursiveReadOnly Enabled: writing the submount gave %q, want EROFS", out)
	}
	if out := e.Exec(t, e.PodContainer(t, p.Name, "ro").ID, "sh", "-c", "touch /v/sub/y && echo written"); out != "written\n" {
		t.Errorf("plain readOnly: writing the submount gave %q, want it writable (only the top mount is read-only)", out)
	}
	// The status says which mounts are recursively read-only, as the
	// kubelet's, and the runtime's user of each container.
	for name, want := range map[string]v1.RecursiveReadOnlyMode{"rro": v1.RecursiveReadOnlyEnabled, "ro": v1.RecursiveReadOnlyDisabled} {
		st := statusOf(t, p, name)
		if len(st.VolumeMounts) != 1 || st.VolumeMounts[0].MountPath != "/v" || st.VolumeMounts[0].RecursiveReadOnly == nil || *st.VolumeMounts[0].RecursiveReadOnly != want {
			t.Errorf("container %s: status volumeMounts %s, want /v recursiveReadOnly %s", name, dump(st.VolumeMounts), want)
		}
		if features.SupplementalGroupsPolicy && (st.User == nil || st.User.Linux == nil || st.User.Linux.UID != 0) {
			t.Errorf("container %s: status user %s, want uid 0 (the runtime reports it)", name, dump(st.User))
		}
	}
}
