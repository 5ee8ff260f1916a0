package vm

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiffnode/skiff/test/cluster"
)

// offlineReady is the line the second boot's script prints once the pod
// runs from the offline copy; the test then starts the API server again.
const offlineReady = "SKIFF-OFFLINE-READY"

// TestSystemdVMOfflinePods (issue 33, --offline-pods): skiff in the VM
// joins a control plane on the host (test/cluster, through qemu's user
// network) and runs pod web, created through the API; the VM powers off,
// web is deleted and fresh created, and the API server stops; the VM
// boots again and web runs from the offline copy (the time is logged);
// the API server comes back, skiff terminates web and starts fresh, and
// fresh's status reaches the API server.
func TestSystemdVMOfflinePods(t *testing.T) {
	requireSystemdVM(t)
	bin := os.Getenv("SKIFF_CONTROLPLANE")
	if bin == "" {
		t.Skip("SKIFF_CONTROLPLANE is not set: the control plane binary (make controlplane; make test-systemd sets it)")
	}
	ctx := t.Context()
	c, err := cluster.Start(ctx, cluster.Config{Dir: filepath.Join(t.TempDir(), "cluster"), Bin: bin, NodeNames: []string{"skiff-vm"}, Logf: t.Logf})
	if err != nil {
		t.Fatalf("control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	cs := c.Client()
	createVMPod(t, cs, "web")
	adds := append(skiffGuest(t, "../../contrib/systemd/skiff.service"),
		Add{Host: "testdata/skiff-offline.env", Guest: skiffGuestEnv},
		Add{Host: guestKubeconfig(t, c), Guest: "/etc/skiff/kubeconfig"},
		Add{Host: "testdata/vm-net-nic", Guest: "/usr/local/lib/skiff-vm/net"})
	disk := filepath.Join(t.TempDir(), "root.img")
	first := SystemdOptions{
		Disk: disk, Adds: adds, Timeout: 12 * time.Minute,
		Command: []string{"sh", "-c", guestShellLib + `
/usr/local/lib/skiff-vm/net || fail "network"
systemctl enable skiff.service 2>/dev/null || fail "systemctl enable skiff.service"
systemctl start skiff.service || fail "systemctl start skiff.service"
wait_pod_running web 300
i=0
until [ -e /var/lib/skiff/offline/complete ] && ls /var/lib/skiff/offline/pods/*.json >/dev/null 2>&1; do
	i=$((i + 1)); [ "$i" -le 60 ] || fail "no offline copy"
	sleep 1
done
ls -lR /var/lib/skiff/offline
`},
	}
	first.Machine.UserNet = true
	runSystemdVM(t, first)
	waitVMPod(t, cs, "web", "Running (reported from the VM)", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	// While the node is off: web deleted, fresh created, the API server
	// stopped.
	zero := int64(0)
	if err := cs.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	createVMPod(t, cs, "fresh")
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	ready := &lineWatch{want: offlineReady, seen: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ready.seen:
			t.Log("web runs from the offline copy: starting the API server again")
			if err := c.StartAPIServer(ctx); err != nil {
				t.Errorf("starting the API server: %v", err)
			}
		case <-ctx.Done():
		}
	}()
	second := SystemdOptions{
		Disk: disk, Timeout: 12 * time.Minute,
		Command: []string{"sh", "-c", guestShellLib + `
wait_pod_running web 300
echo "web Running from the offline copy: uptime $(cut -d' ' -f1 /proc/uptime)s, skiff.service active since uptime $(($(systemctl show -P ActiveEnterTimestampMonotonic skiff.service) / 1000000))s"
skiff pods --root-dir /var/lib/skiff 2>&1
skiff pods --root-dir /var/lib/skiff 2>&1 | grep -q "offline copy.*default/web" || fail "web is not shown as the offline copy's"
echo ` + offlineReady + `
i=0
until ! skiff pods --root-dir /var/lib/skiff 2>/dev/null | grep -q "^web " && skiff pods --root-dir /var/lib/skiff 2>/dev/null | grep -q "^fresh .*Running"; do
	i=$((i + 1)); [ "$i" -le 300 ] || fail "after the API server came back: $(skiff pods --root-dir /var/lib/skiff 2>&1)"
	sleep 1
done
echo "the API server answered: web terminated and fresh Running after about ${i}s"
`},
	}
	second.Machine.UserNet = true
	second.Machine.Console = ready
	_, console := runSystemdVM(t, second)
	wg.Wait()
	for _, l := range strings.Split(console, "\n") {
		if strings.Contains(l, "web Running from the offline copy") || strings.Contains(l, "the API server answered") {
			t.Log(strings.TrimSpace(l))
		}
	}
	waitVMPod(t, cs, "fresh", "Running (reported from the VM)", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if _, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("web in the API server after the second boot: %v", err)
	}
}

// createVMPod creates a pod bound to the VM's node, reading a service
// account token (the default kube-api-access volume) and ConfigMap
// kube-root-ca.crt through it.
func createVMPod(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	grace := int64(5)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName: "skiff-vm", TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: "skiff.test/busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; while :; do sleep 1; done"}}},
		},
	}
	if _, err := cs.CoreV1().Pods("default").Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitVMPod(t *testing.T, cs kubernetes.Interface, name, what string, cond func(*v1.Pod) bool) {
	t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s: not %s: %v; last status %+v", name, what, err, last)
	}
}

// guestKubeconfig is the node kubeconfig of c for the guest: the API
// server at 10.0.2.2 (qemu's user network: the host's loopback), its
// certificate checked for 127.0.0.1.
func guestKubeconfig(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig("skiff-vm"))
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(strings.TrimPrefix(c.Server(), "https://"), ":")
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatalf("API server %s: no port", c.Server())
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://10.0.2.2:" + port
		cl.TLSServerName = "127.0.0.1"
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// lineWatch is a console writer that closes seen at the first line
// starting with want.
type lineWatch struct {
	want string
	seen chan struct{}

	mu   sync.Mutex
	buf  []byte
	done bool
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	sc := bufio.NewScanner(strings.NewReader(string(w.buf)))
	for sc.Scan() {
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), w.want) {
			w.done = true
			close(w.seen)
			return len(p), nil
		}
	}
	if i := strings.LastIndexByte(string(w.buf), '\n'); i >= 0 {
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

var _ io.Writer = (*lineWatch)(nil)
