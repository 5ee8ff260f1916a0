package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's CVE classes attempted against skiff end to end; each test
// attacks and asserts that the attack fails. The advisories, and the unit
// tests beside these, are in docs/security-tests.md.

// TestCVE_SubPathSymlinkEscape_CVE_2017_1002101_CVE_2021_25741: an init
// container plants symlinks to a host directory in an emptyDir, absolute,
// relative and nested; containers mounting them by subPath or subPathExpr
// wait in CreateContainerConfigError and never run (CVE-2017-1002101).
// A container mounting a real directory by subPath runs; another
// container then swaps that directory for a symlink to the host: the
// running container still sees the original (its mount is a pin of the
// directory checked, CVE-2021-25741), and nothing reaches the host
// directory.
func TestCVE_SubPathSymlinkEscape_CVE_2017_1002101_CVE_2021_25741(t *testing.T) {
	e := NewEnv(t)
	host := filepath.Join(e.Dir, "host")
	if err := os.MkdirAll(host, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "marker"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.StartAgent(t, AgentOptions{})
	plant := fmt.Sprintf("mkdir -p /vol/d /vol/n && echo inside > /vol/d/f && ln -s %[1]s /vol/abs && ln -s ../../../../../../../../..%[1]s /vol/rel && ln -s %[1]s /vol/n/x", host)
	escaper := func(name string, mount string) string {
		return container(name, busyboxImage, []string{"sh", "-c", "touch /mnt/escaped-" + name + "; " + sleepLoop}, nil,
			"volumeMounts: [{name: vol, mountPath: /mnt, "+mount+"}]", "env: [{name: LINK, value: n/x}]")
	}
	swap := fmt.Sprintf("until [ -e /vol/d/seen ]; do sleep 0.2; done; mv /vol/d /vol/d.orig && ln -s %s /vol/d && touch /vol/swapped; %s", host, sleepLoop)
	e.WriteManifest(t, "subpath.yaml", podSpec("subpath", []string{
		"terminationGracePeriodSeconds: 1", "volumes: [{name: vol, emptyDir: {}}]",
	}, []string{
		container("plant", busyboxImage, []string{"sh", "-c", plant}, nil, "volumeMounts: [{name: vol, mountPath: /vol}]"),
	}, []string{
		escaper("abs", "subPath: abs"),
		escaper("rel", "subPath: rel"),
		escaper("nested", "subPath: n/x"),
		escaper("expr", "subPathExpr: $(LINK)"),
		container("pinned", busyboxImage, []string{"sh", "-c", "touch /mnt/seen; " + sleepLoop}, nil, "volumeMounts: [{name: vol, mountPath: /mnt, subPath: d}]"),
		container("swapper", busyboxImage, []string{"sh", "-c", swap}, nil, "volumeMounts: [{name: vol, mountPath: /vol}]"),
	}))
	for _, name := range []string{"abs", "rel", "nested", "expr"} {
		p := e.WaitForPod(t, PodName("subpath"), containerCond(name, waitingReason("CreateContainerConfigError")), podStartTimeout)
		if msg := statusOf(t, p, name).State.Waiting.Message; !strings.Contains(msg, "not within volume path") {
			t.Errorf("%s: waiting message %q, want the subPath refused as outside the volume", name, msg)
		}
	}
	p := e.WaitForPod(t, PodName("subpath"), func(p *v1.Pod) bool {
		return statusOf(t, p, "pinned").State.Running != nil && statusOf(t, p, "swapper").State.Running != nil
	}, podStartTimeout)
	swapper := e.PodContainer(t, p.Name, "swapper").ID
	eventually(t, 30*time.Second, func() (bool, string) {
		out := e.execOut(t, swapper, "sh", "-c", "test -e /vol/swapped && echo yes")
		return strings.TrimSpace(out) == "yes", "the swapper has not swapped /vol/d yet"
	})
	pinned := e.PodContainer(t, p.Name, "pinned").ID
	if got := e.Exec(t, pinned, "sh", "-c", "ls /mnt; cat /mnt/f"); !strings.Contains(got, "inside") || strings.Contains(got, "marker") {
		t.Errorf("the pinned subPath after the swap shows %q, want the original directory, not the host's", got)
	}
	entries, err := os.ReadDir(host)
	if err != nil || len(entries) != 1 {
		t.Errorf("host directory: %v, %v; want only its marker (no container reached it)", entries, err)
	}
	pin := filepath.Join(e.s.Root, "pods", string(p.UID), "volume-subpaths", "vol", "pinned", "0")
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil || !strings.Contains(string(mi), " "+pin+" ") {
		t.Errorf("no pin mounted at %s (%v)", pin, err)
	}
	e.RemoveManifest(t, "subpath.yaml")
	e.WaitForPodGone(t, PodName("subpath"), podGoneTimeout)
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), string(p.UID)) {
		t.Errorf("mounts of the pod remain after its removal")
	}
}

// TestCVE_AtomicWriterVolumesReadOnly_CVE_2017_1002102: configMap, secret,
// downwardAPI and projected volumes mounted with readOnly: false, whole
// and by subPath, are read-only in the container: it cannot plant the
// symlinks the kubelet's atomic writer once followed (kubernetes#60814).
func TestCVE_AtomicWriterVolumesReadOnly_CVE_2017_1002102(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	objs := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cve-cm}\ndata: {k: v}\n---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata: {name: cve-secret}\nstringData: {k: v}\n---\n"
	e.WriteManifest(t, "ro.yaml", objs+podSpec("ro", []string{
		"terminationGracePeriodSeconds: 1",
		`volumes: [{name: cm, configMap: {name: cve-cm}}, {name: sec, secret: {secretName: cve-secret}},` +
			` {name: info, downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}},` +
			` {name: proj, projected: {sources: [{configMap: {name: cve-cm}}]}}]`,
	}, nil, []string{
		sleeper("app", `volumeMounts: [{name: cm, mountPath: /cm, readOnly: false}, {name: sec, mountPath: /sec, readOnly: false},`+
			` {name: info, mountPath: /info, readOnly: false}, {name: proj, mountPath: /proj, readOnly: false},`+
			` {name: cm, mountPath: /k, subPath: k, readOnly: false}]`),
	}))
	p := e.WaitForPod(t, PodName("ro"), runningAndReady, podStartTimeout)
	app := e.PodContainer(t, p.Name, "app").ID
	for _, attempt := range []string{
		"ln -s / /cm/evil", "ln -s /etc /sec/..2020_01_01", "touch /info/x", "rm -f /proj/k", "rm /proj/..data", "ln -s / /proj/..2020_01_01_evil", "echo x > /k",
	} {
		if out := e.execOut(t, app, "sh", "-c", attempt+" 2>&1 && echo WROTE"); strings.Contains(out, "WROTE") || !strings.Contains(out, "Read-only file system") {
			t.Errorf("%q in the container: %q, want EROFS", attempt, out)
		}
	}
}

// TestCVE_SeccompLocalhostEmpty_CVE_2023_2431: a container whose seccomp
// profile is Localhost with an empty profile (which validation accepts)
// waits in CreateContainerConfigError with the kubelet's message instead
// of running unconfined (kubernetes#118690).
func TestCVE_SeccompLocalhostEmpty_CVE_2023_2431(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "seccomp.yaml", podSpec("seccomp", []string{"terminationGracePeriodSeconds: 1"}, nil, []string{
		sleeper("app", `securityContext: {seccompProfile: {type: Localhost, localhostProfile: ""}}`),
	}))
	p := e.WaitForPod(t, PodName("seccomp"), containerCond("app", waitingReason("CreateContainerConfigError")), podStartTimeout)
	if msg := statusOf(t, p, "app").State.Waiting.Message; msg != "localhostProfile must be set if seccompProfile type is Localhost." {
		t.Errorf("waiting message %q, want the kubelet's", msg)
	}
}

// TestCVE_ContainerLogSymlink: a container with a hostPath of the pod logs
// directory replaces its own log with a symlink to a host file (in the
// CRI format, so that a reader following it would print it): `skiff logs`
// (the kubelet API's /containerLogs) refuses it and never prints the
// file; removing the pod removes the link, not the file. No CVE: Aqua's
// "pod escape using log mounts" (kube-hunter KHV047).
func TestCVE_ContainerLogSymlink(t *testing.T) {
	e := NewEnv(t)
	secret := filepath.Join(e.Dir, "secret.log")
	if err := os.WriteFile(secret, []byte("2026-01-01T00:00:00Z stdout F host-secret-line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.StartAgent(t, AgentOptions{})
	attack := fmt.Sprintf(`echo started; sleep 1; d=$(ls -d /podlogs/default_logsym-%s_*/app); rm $d/0.log && ln -s %s $d/0.log && echo planted > /tmp/planted; %s`,
		nodeName, secret, sleepLoop)
	e.WriteManifest(t, "logsym.yaml", podSpec("logsym", []string{
		"terminationGracePeriodSeconds: 1", fmt.Sprintf("volumes: [{name: logs, hostPath: {path: %q, type: Directory}}]", e.PodLogsDir),
	}, nil, []string{
		container("app", busyboxImage, []string{"sh", "-c", attack}, nil, "volumeMounts: [{name: logs, mountPath: /podlogs}]"),
	}))
	p := e.WaitForPod(t, PodName("logsym"), runningAndReady, podStartTimeout)
	app := e.PodContainer(t, p.Name, "app").ID
	eventually(t, 30*time.Second, func() (bool, string) {
		return strings.TrimSpace(e.execOut(t, app, "cat", "/tmp/planted")) == "planted", "the container has not planted its link yet"
	})
	out, err := e.Skiff(t, "logs", p.Name, "-c", "app")
	if strings.Contains(out, "host-secret-line") || err == nil || !strings.Contains(out, "not a regular file") {
		t.Errorf("skiff logs through the planted link: %v\n%s\nwant refused, naming the file, without its content", err, out)
	}
	e.RemoveManifest(t, "logsym.yaml")
	e.WaitForPodGone(t, PodName("logsym"), podGoneTimeout)
	if data, err := os.ReadFile(secret); err != nil || !strings.Contains(string(data), "host-secret-line") {
		t.Errorf("the host file after the pod's removal: %q, %v; want untouched", data, err)
	}
}

// TestCVE_ReadOnlyPort_CVE_2019_11248_CVE_2025_0426: with --read-only-port,
// every request that would run a command, stream, change images, profile
// or checkpoint gets 404, 405 or 501 there, and the command never runs
// (kubernetes#81023: pprof on the unauthenticated healthz port;
// kubernetes#130016: checkpoints through the read-only port).
func TestCVE_ReadOnlyPort_CVE_2019_11248_CVE_2025_0426(t *testing.T) {
	e := NewEnv(t)
	port := freeTCPPort(t)
	e.StartAgent(t, AgentOptions{Args: []string{"--read-only-port", strconv.Itoa(port)}})
	e.WriteManifest(t, "victim.yaml", podSpec("victim", []string{"terminationGracePeriodSeconds: 1"}, nil, []string{sleeper("app")}))
	p := e.WaitForPod(t, PodName("victim"), runningAndReady, podStartTimeout)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	pod := namespace + "/" + p.Name
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(base + "/pods")
	if err != nil {
		t.Fatalf("read-only port /pods: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("read-only port /pods: %s, want 200", resp.Status)
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, "/run/" + pod + "/app?cmd=touch&cmd=/tmp/pwned"},
		{http.MethodPost, "/exec/" + pod + "/app?command=touch&command=/tmp/pwned&output=1"},
		{http.MethodGet, "/exec/" + pod + "/app?command=touch&command=/tmp/pwned&output=1"},
		{http.MethodPost, "/attach/" + pod + "/app?output=1"},
		{http.MethodPost, "/portForward/" + pod},
		{http.MethodPost, "/images/pull?image=" + busyboxImage},
		{http.MethodDelete, "/images?image=" + busyboxImage},
		{http.MethodGet, "/debug/pprof/"},
		{http.MethodGet, "/debug/pprof/cmdline"},
		{http.MethodPost, "/checkpoint/" + pod + "/app"},
		{http.MethodGet, "/logs/"},
		{http.MethodGet, "/configz"},
	} {
		req, err := http.NewRequest(r.method, base+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", r.method, r.path, err)
			continue
		}
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		default:
			t.Errorf("read-only port: %s %s = %d, want 404, 405 or 501", r.method, r.path, resp.StatusCode)
		}
	}
	app := e.PodContainer(t, p.Name, "app").ID
	if out := e.execOut(t, app, "sh", "-c", "test -e /tmp/pwned && echo RAN"); strings.Contains(out, "RAN") {
		t.Error("a command sent to the read-only port ran in the container")
	}
	if out, err := e.Skiff(t, "images", "ls"); err != nil || !strings.Contains(out, "busybox") {
		t.Errorf("images after the attempts: %v\n%s\nwant busybox still there", err, out)
	}
}
