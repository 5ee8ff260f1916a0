package server

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxEtcdConnections bounds the shim's client connections to etcd: the
// storage's one shared client plus k8s.io/apiserver's own for /livez,
// /readyz and the storage metrics (upstream dials one more per resource:
// 14 in all before sharedEtcd).
const maxEtcdConnections = 5

// TestOneEtcdClientForAllResources: with every resource served (pods,
// ConfigMaps and the rest written and read), the shim holds at most
// maxEtcdConnections connections to its etcd, not one per resource.
func TestOneEtcdClientForAllResources(t *testing.T) {
	s, _, client := startShim(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("default").Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(s.etcd.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	n := establishedTo(t, uint16(port))
	t.Logf("%d connections to etcd's port %d", n, port)
	if n == 0 || n > maxEtcdConnections {
		t.Errorf("%d connections to etcd, want 1-%d", n, maxEtcdConnections)
	}
}

// establishedTo counts this process's established IPv4 TCP connections
// whose remote port is port (/proc/self/net/tcp).
func establishedTo(t *testing.T, port uint16) int {
	t.Helper()
	f, err := os.Open("/proc/self/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st ...
		fields := strings.Fields(sc.Text())
		if len(fields) > 3 && fields[3] == "01" && strings.HasSuffix(fields[2], want) {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
