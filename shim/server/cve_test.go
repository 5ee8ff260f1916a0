package server

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestShimCVEs attacks the shim's API as the kubelet CVEs did the
// kube-apiserver's (see docs/security-tests.md): a node identity reaching
// what NodeRestriction forbids, a ServiceAccount token used after its pod
// is gone, and a compromised kubelet answering the shim's exec and
// port-forward proxy with a redirect or an error.
func TestShimCVEs(t *testing.T) {
	s, cfg, admin := startShimWith(t, Options{NodeName: "node-a"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	nodeA := nodeClient(t, s.NodeKubeconfig)
	node, err := nodeA.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// CVE-2025-5187 (kubernetes#133471): a node patching an owner
	// reference into its own Node, which the garbage collector then
	// deletes, to recreate it with other labels and taints.
	t.Run("CVE-2025-5187-node-owner-reference", func(t *testing.T) {
		owner := `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Namespace","name":"gone","uid":"00000000-0000-0000-0000-000000000000"}]}}`
		for _, pt := range []types.PatchType{types.MergePatchType, types.StrategicMergePatchType} {
			_, err := nodeA.CoreV1().Nodes().Patch(ctx, "node-a", pt, []byte(owner), metav1.PatchOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ownerReferences") {
				t.Errorf("%s patch of its own ownerReferences: %v, want 403 naming ownerReferences", pt, err)
			}
		}
		owned := node.DeepCopy()
		owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "gone", UID: "x"}}
		if _, err := nodeA.CoreV1().Nodes().Update(ctx, owned, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("update of its own ownerReferences: %v, want 403", err)
		}
		got, err := admin.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil || len(got.OwnerReferences) != 0 {
			t.Errorf("node-a after the attempts: %v, %v; want no owner", got.OwnerReferences, err)
		}
	})

	// CVE-2025-4563 (kubernetes#132151): a node creating a mirror pod
	// that claims dynamic resources.
	t.Run("CVE-2025-4563-mirror-pod-resource-claims", func(t *testing.T) {
		mirror := testPod("static-claims-node-a", "node-a")
		mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: node.UID, Controller: ptr.To(true)}}
		mirror.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("someone-elses")}}
		mirror.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		// Refused by validation (skiff has no DRA) before NodeRestriction,
		// which refuses it too (noderestriction's TestAdmit).
		_, err := nodeA.CoreV1().Pods("default").Create(ctx, mirror, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("mirror pod with resourceClaims: %v, want 403 or 422", err)
		}
		if _, err := admin.CoreV1().Pods("default").Get(ctx, mirror.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the mirror pod exists: %v", err)
		}
	})

	// A pod-bound ServiceAccount token after its pod is gone: deleted,
	// then recreated under the same name (another UID). No advisory: the
	// bound tokens' contract (KEP-1205).
	t.Run("sa-token-after-pod-gone", func(t *testing.T) {
		saClient := func(token string) kubernetes.Interface {
			c := rest.AnonymousClientConfig(cfg)
			c.BearerToken = token
			return kubernetes.NewForConfigOrDie(c)
		}
		waitFor(ctx, t, "default service account", func() (bool, error) {
			_, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			return err == nil, ignoreNotFound(err)
		})
		token := func(pod *corev1.Pod) string {
			tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return tr.Status.Token
		}
		pod, err := admin.CoreV1().Pods("default").Create(ctx, testPod("bound", "node-a"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old := token(pod)
		if _, err := saClient(old).Discovery().ServerVersion(); err != nil {
			t.Fatalf("token of a live pod: %v", err)
		}
		if err := admin.CoreV1().Pods("default").Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := saClient(old).Discovery().ServerVersion(); !apierrors.IsUnauthorized(err) {
			t.Errorf("token of a deleted pod: %v, want 401", err)
		}
		again, err := admin.CoreV1().Pods("default").Create(ctx, testPod("bound", "node-a"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := saClient(old).Discovery().ServerVersion(); !apierrors.IsUnauthorized(err) {
			t.Errorf("token of a pod recreated under its name: %v, want 401", err)
		}
		if _, err := saClient(token(again)).Discovery().ServerVersion(); err != nil {
			t.Errorf("token of the new pod: %v", err)
		}
	})

	// A compromised kubelet answering the shim's proxied upgrade.
	evil := newEvilKubelet(t)
	evilNode(ctx, t, admin, evil)
	// CVE-2020-8559 (kubernetes#92914): a redirect, which the shim must
	// not follow with its kubelet credentials nor pass to the client.
	t.Run("CVE-2020-8559-kubelet-redirect", func(t *testing.T) {
		status, _ := rawRequests(t, cfg, s.URL, "/api/v1/namespaces/default/pods/evil/portforward?ports=80", "")
		if status == http.StatusSwitchingProtocols || (status >= 300 && status < 400) {
			t.Errorf("upgrade answered with a redirect by the kubelet: %d, want an error", status)
		}
		if n := evil.redirectHits(); n != 0 {
			t.Errorf("the redirect's target got %d requests, want none", n)
		}
	})
	// CVE-2018-1002105 (kubernetes#71411): an upgrade the kubelet refuses
	// must not leave the connection to it open for the client's next
	// request, which would reach the kubelet with the shim's credentials.
	t.Run("CVE-2018-1002105-failed-upgrade", func(t *testing.T) {
		status, _ := rawRequests(t, cfg, s.URL, "/api/v1/namespaces/default/pods/refused/portforward?ports=80",
			"GET /runningpods/ HTTP/1.1\r\nHost: kubelet\r\n\r\n")
		if status == http.StatusSwitchingProtocols {
			t.Errorf("refused upgrade answered 101")
		}
		var after []string
		for _, p := range evil.paths() {
			if !strings.HasPrefix(p, "/portForward/default/evil") {
				after = append(after, p)
			}
		}
		if len(after) != 1 || !strings.HasPrefix(after[0], "/portForward/default/refused") {
			t.Errorf("the kubelet got %v, want only the refused upgrade", after)
		}
	})
}

// evilKubelet is a compromised kubelet API: /portForward of pod evil
// redirects to its own /stolen (counted), that of pod refused answers
// 403 and keeps the connection open; it records every request's path.
type evilKubelet struct {
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []string
	stolen int
}

func newEvilKubelet(t *testing.T) *evilKubelet {
	t.Helper()
	k := &evilKubelet{}
	k.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.reqs = append(k.reqs, r.URL.Path)
		if r.URL.Path == "/stolen" {
			k.stolen++
		}
		k.mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/portForward/default/evil"):
			http.Redirect(w, r, "https://"+r.Host+"/stolen", http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/portForward/default/refused"):
			http.Error(w, "forbidden", http.StatusForbidden)
		default:
			http.NotFound(w, r)
		}
	}))
	k.srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	k.srv.StartTLS()
	t.Cleanup(k.srv.Close)
	return k
}

func (k *evilKubelet) redirectHits() int { k.mu.Lock(); defer k.mu.Unlock(); return k.stolen }

func (k *evilKubelet) paths() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, p := range k.reqs {
		if p != "/stolen" {
			out = append(out, p)
		}
	}
	return out
}

// evilNode registers node-evil at k's address with pods evil and refused.
func evilNode(ctx context.Context, t *testing.T, admin kubernetes.Interface, k *evilKubelet) {
	t.Helper()
	host, portStr, err := net.SplitHostPort(k.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-evil"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"evil", "refused"} {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, testPod(name, "node-evil"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// rawRequests sends, as the admin on one connection to the shim, an SPDY
// upgrade request for path, reads the answer, then writes next (when not
// empty) as a client smuggling a request after a failed upgrade would,
// and reads until the shim closes the connection or a second passes. It
// returns the upgrade's status and whatever came after.
func rawRequests(t *testing.T, cfg *rest.Config, shimURL, path, next string) (int, string) {
	t.Helper()
	conn, br, resp := dialUpgrade(t, cfg, shimURL, path)
	defer conn.Close()
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if next == "" {
		return resp.StatusCode, ""
	}
	_, _ = io.WriteString(conn, next)
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	rest, _ := io.ReadAll(br)
	return resp.StatusCode, string(rest)
}
