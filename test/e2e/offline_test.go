package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"golang.org/x/sys/unix"

	"github.com/skiffnode/skiff/test/cluster"
)

// offlineAnnotation is apisource.OfflineCopyAnnotation.
const offlineAnnotation = "skiff.io/offline-copy"

// apiProxy forwards TCP connections to the API server while up; down
// closes every connection and drops new ones at once, so that the node
// loses its API server while the test's own client keeps it.
type apiProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	up    bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// startAPIProxy forwards a loopback port to target (host:port); stopped
// with the test.
func startAPIProxy(t *testing.T, target string) *apiProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &apiProxy{ln: ln, target: target, up: true, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.setUp(false); p.wg.Wait() })
	return p
}

func (p *apiProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if !p.up {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(pair[0], pair[1])
				_ = pair[0].Close()
				_ = pair[1].Close()
			}()
		}
	}
}

// setUp lets connections through, or cuts them all.
func (p *apiProxy) setUp(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = up
	if !up {
		for c := range p.conns {
			_ = c.Close()
		}
		p.conns = map[net.Conn]bool{}
	}
}

// proxyKubeconfig writes the node's kubeconfig of c with the proxy as its
// server.
func proxyKubeconfig(t *testing.T, e *Env, c *cluster.Cluster, p *apiProxy) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig(nodeName))
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + p.ln.Addr().String()
	}
	path := filepath.Join(e.Dir, "node-via-proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// offlinePod reads ConfigMap offline-cm (a volume), Secret offline-secret
// (env) and a service account token (the kube-api-access volume).
func offlinePod(name string) *v1.Pod {
	p := apiPod(name, 2, "sleep 100000", v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{
		ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "offline-cm"}}}})
	p.Spec.AutomountServiceAccountToken = nil
	p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{
		SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "offline-secret"}, Key: "password"}}}}
	return p
}

// TestOfflinePods_Issue33 (--offline-pods): the copy holds the pods and
// what they read, 0600 in 0700; an API outage stops no pod and flips no
// Ready condition; after a "reboot" (agent killed, sandboxes and volumes
// gone) with the API server unreachable the pods run again from the copy,
// volumes and env filled from it, marked in the local API and `skiff
// pods`; when the API server answers again a pod deleted meanwhile is
// terminated, one created meanwhile starts, an edited one is updated
// without a restart; with the flag off the copy is removed.
func TestOfflinePods_Issue33(t *testing.T) {
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	proxy := startAPIProxy(t, strings.TrimPrefix(c.Server(), "https://"))
	args := AgentOptions{Args: []string{"--kubeconfig", proxyKubeconfig(t, e, c, proxy), "--offline-pods"}}
	e.StartAgent(t, args)
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	t.Cleanup(func() { proxy.setUp(true) }) // before deleteAPIPods
	checkServiceAccountAndConfigMap(t, c, cs)
	if _, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "offline-cm"}, Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(namespace).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "offline-secret"}, StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().ConfigMaps(namespace).Delete(ctx, "offline-cm", metav1.DeleteOptions{})
		_ = cs.CoreV1().Secrets(namespace).Delete(ctx, "offline-secret", metav1.DeleteOptions{})
	})
	for _, p := range []*v1.Pod{offlinePod("keep"), apiPod("gone", 2, "sleep 100000")} {
		if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	keep := waitAPIPod(t, cs, "keep", "Ready", podReady)
	gone := waitAPIPod(t, cs, "gone", "Ready", podReady)
	checkOfflineCopy(t, e, keep, gone)

	checkOutage(t, e, cs, proxy)

	// A reboot with the API server unreachable.
	e.KillAgent(t)
	proxy.setUp(false)
	e.forgetPods(t, keep, gone)
	began := time.Now()
	e.StartAgent(t, args)
	for _, name := range []string{"keep", "gone"} {
		p := e.WaitForPod(t, name, runningAndReady, podStartTimeout)
		if p.Annotations[offlineAnnotation] == "" {
			t.Errorf("pod %s runs without the %s annotation", name, offlineAnnotation)
		}
	}
	t.Logf("offline: both pods Running and Ready %v after the agent started (the API server unreachable)", time.Since(began).Round(100*time.Millisecond))
	if r := e.skiffSplit(t, "pods"); !strings.Contains(r.stderr, "offline copy") || !strings.Contains(r.stderr, namespace+"/keep") {
		t.Errorf("skiff pods: %s; want the pods of the offline copy named", r)
	}
	app := e.PodContainer(t, "keep", "app")
	if got := e.Exec(t, app.ID, "sh", "-c", "cat /out/greeting; echo; echo $PASSWORD; wc -c < /var/run/secrets/kubernetes.io/serviceaccount/token; grep -c BEGIN /var/run/secrets/kubernetes.io/serviceaccount/ca.crt"); !strings.HasPrefix(got, "hello\ns3cret\n") || strings.Contains(got, "\n0\n") {
		t.Errorf("keep from the copy: %q; want the ConfigMap, the Secret, a token and the CA", got)
	}

	// Meanwhile: gone is deleted, fresh is created, keep gets a label.
	zero := int64(0)
	if err := cs.CoreV1().Pods(namespace).Delete(ctx, "gone", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, apiPod("fresh", 2, "sleep 100000"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(namespace).Patch(ctx, "keep", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"edited":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy.setUp(true)
	waitAPIPod(t, cs, "fresh", "Ready", podReady)
	e.WaitForPodGone(t, "gone", podGoneTimeout)
	back := waitAPIPod(t, cs, "keep", "Ready, with the container started offline", func(p *v1.Pod) bool {
		return podReady(p) && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ContainerID == "containerd://"+app.ID
	})
	if n := back.Status.ContainerStatuses[0].RestartCount; n != 0 {
		t.Errorf("keep: restartCount %d after the API server came back, want 0", n)
	}
	waitEventSince(t, cs, "keep", "Started", began)
	local := e.WaitForPod(t, "keep", func(p *v1.Pod) bool { return p.Labels["edited"] == "yes" }, apiTimeout)
	if _, ok := local.Annotations[offlineAnnotation]; ok {
		t.Errorf("keep still marked as the offline copy's after the API server answered")
	}

	// The flag off: the copy is removed.
	e.StopAgent(t)
	e.StartAgent(t, AgentOptions{Args: []string{"--kubeconfig", proxyKubeconfig(t, e, c, proxy)}})
	if _, err := os.Stat(filepath.Join(e.s.Root, "offline")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the offline copy after a start without --offline-pods: %v, want removed", err)
	}
}

// waitEventSince waits for an event reason about pod that last happened
// at or after since (held while the API server did not answer, posted
// when it did).
func waitEventSince(t *testing.T, cs kubernetes.Interface, pod, reason string, since time.Time) {
	t.Helper()
	since = since.Truncate(time.Second)
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, apiTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, nil
		}
		for _, ev := range l.Items {
			if ev.Reason == reason && !ev.LastTimestamp.Time.Before(since) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no event %s about %s since %v: %v", reason, pod, since, err)
	}
}

// checkOfflineCopy: the copy is 0700, its files 0600, and holds both pods,
// the ConfigMaps (kube-root-ca.crt too), the Secret and keep's token.
func checkOfflineCopy(t *testing.T, e *Env, keep, gone *v1.Pod) {
	t.Helper()
	dir := filepath.Join(e.s.Root, "offline")
	want := map[string]bool{
		"pods/" + string(keep.UID) + ".json": false, "pods/" + string(gone.UID) + ".json": false,
		"configmaps/" + namespace + "_offline-cm.json": false, "configmaps/" + namespace + "_kube-root-ca.crt.json": false,
		"secrets/" + namespace + "_offline-secret.json": false,
	}
	tokens := 0
	eventually(t, apiTimeout, func() (bool, string) {
		tokens = 0
		for k := range want {
			want[k] = false
		}
		var bad []string
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			if m := info.Mode().Perm(); (d.IsDir() && m != 0o700) || (!d.IsDir() && m != 0o600) {
				bad = append(bad, fmt.Sprintf("%s %v", rel, m))
			}
			if _, ok := want[rel]; ok {
				want[rel] = true
			}
			if strings.HasPrefix(rel, "tokens/"+string(keep.UID)+"_") {
				tokens++
			}
			return nil
		})
		if err != nil {
			return false, err.Error()
		}
		if len(bad) > 0 {
			t.Fatalf("offline copy modes: %v; want directories 0700, files 0600", bad)
		}
		for k, found := range want {
			if !found {
				return false, "missing " + k
			}
		}
		return tokens == 1, fmt.Sprintf("%d tokens of keep", tokens)
	})
	data, err := os.ReadFile(filepath.Join(dir, "secrets", namespace+"_offline-secret.json"))
	if err != nil || !strings.Contains(string(data), `"czNjcmV0"`) {
		t.Errorf("the Secret's copy: %s, %v", data, err)
	}
}

// checkOutage: 25 s without the API server (over two node status updates
// and lease renewals) stop no container, and, once it is back, no pod's
// Ready condition flipped in the API server's eyes and the node's Ready
// condition did not change.
func checkOutage(t *testing.T, e *Env, cs kubernetes.Interface, proxy *apiProxy) {
	t.Helper()
	before := map[string]string{}
	for _, name := range []string{"keep", "gone"} {
		before[name] = e.PodContainer(t, name, "app").ID
	}
	readyBefore := nodeReadyCondition(t, waitNodeReady(t, cs))
	stopWatch := watchNotReady(t, cs)
	proxy.setUp(false)
	time.Sleep(25 * time.Second)
	for name, id := range before {
		p, err := e.findPod(name)
		if err != nil || !runningAndReady(p) {
			t.Errorf("pod %s during the outage: %v, %v", name, err, dump(p))
		}
		if got := e.PodContainer(t, name, "app").ID; got != id {
			t.Errorf("pod %s: container %s during the outage, want %s kept", name, got, id)
		}
	}
	proxy.setUp(true)
	time.Sleep(15 * time.Second) // a pod status resync and a node status update
	if flips := stopWatch(); len(flips) > 0 {
		t.Errorf("pods reported not Ready across the outage: %v", flips)
	}
	if after := nodeReadyCondition(t, waitNodeReady(t, cs)); after.Status != v1.ConditionTrue || !after.LastTransitionTime.Equal(&readyBefore.LastTransitionTime) {
		t.Errorf("node Ready after the outage: %+v; before: %+v", after, readyBefore)
	}
}

func nodeReadyCondition(t *testing.T, n *v1.Node) v1.NodeCondition {
	t.Helper()
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c
		}
	}
	t.Fatalf("node %s has no Ready condition", n.Name)
	return v1.NodeCondition{}
}

// forgetPods does what a reboot does to pods, after the agent (and the
// managed containerd with it) was killed: their processes and shims are
// gone, their tmpfs volumes empty; containerd's records of their
// sandboxes and containers stay, as on disk after a reboot.
func (e *Env) forgetPods(t *testing.T, pods ...*v1.Pod) {
	t.Helper()
	for _, p := range pods {
		killPodProcesses(t, string(p.UID))
	}
	killShims(e.s.Root)
	for _, p := range pods {
		dir := filepath.Join(e.s.Root, "pods", string(p.UID))
		unmountUnder(dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
}

// killShims kills the runtime shims of the containerd under root (not
// the test's control plane, whose files are under root too).
func killShims(root string) {
	killProcesses(func(cmdline string) bool {
		return strings.Contains(cmdline, "containerd-shim") && strings.Contains(cmdline, root)
	}, false)
}

// killPodProcesses kills every process in the cgroups of pod uid (the
// cgroupfs driver's pod<uid>, the systemd driver's ...-pod<uid_>.slice).
func killPodProcesses(t *testing.T, uid string) {
	t.Helper()
	root := "/sys/fs/cgroup/memory"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		root = "/sys/fs/cgroup"
	}
	names := []string{"pod" + uid, "pod" + strings.ReplaceAll(uid, "-", "_")}
	killed := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		base := d.Name()
		if !strings.Contains(base, names[0]) && !strings.Contains(base, names[1]) {
			return nil
		}
		_ = filepath.WalkDir(path, func(sub string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(sub)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = unix.Kill(pid, unix.SIGKILL)
					killed++
				}
			}
			return nil
		})
		return filepath.SkipDir
	})
	if err != nil || killed == 0 {
		t.Fatalf("killing pod %s under %s: %d processes, %v", uid, root, killed, err)
	}
}
