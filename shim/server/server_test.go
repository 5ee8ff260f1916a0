package server

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// startShim runs the shim with embedded etcd in a temp dir on a free port
// and returns an admin client once it is ready.
func startShim(t *testing.T) (*Server, *rest.Config, kubernetes.Interface) {
	t.Helper()
	return startShimWith(t, Options{})
}

// startShimWith is startShim with o, whose DataDir, BindAddress and
// SecurePort it sets.
func startShimWith(t *testing.T, o Options) (*Server, *rest.Config, kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	o.DataDir, o.BindAddress, o.SecurePort = dir, "127.0.0.1", 0
	s, err := New(ctx, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("shim did not stop")
		}
	})
	for _, f := range []string{"admin.kubeconfig", "admin.token", "pki/ca.key"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	deadline := time.Now().Add(60 * time.Second)
	for {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			if _, err := client.CoreV1().Namespaces().Get(ctx, "kube-node-lease", metav1.GetOptions{}); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("shim not ready: %v %s", err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s, cfg, client
}

func TestShimServesCoreObjects(t *testing.T) {
	s, cfg, client := startShim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("anonymous is refused", func(t *testing.T) {
		anon := rest.AnonymousClientConfig(cfg)
		c := kubernetes.NewForConfigOrDie(anon)
		_, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			t.Fatalf("anonymous list: %v, want 401", err)
		}
		resp, err := (&http.Client{Transport: mustTransport(t, anon)}).Get(s.URL + "/api")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("anonymous /api: %d", resp.StatusCode)
		}
	})

	t.Run("OpenAPI v2 and v3 built at the first requests", func(t *testing.T) {
		testOpenAPI(ctx, t, client)
	})

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shim-test"}}
	ns, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Status.Phase != corev1.NamespaceActive || ns.UID == "" {
		t.Fatalf("namespace: phase %q uid %q", ns.Status.Phase, ns.UID)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName:   "node-a",
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}},
		},
	}
	pod, err = client.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways || pod.Spec.DNSPolicy != corev1.DNSClusterFirst ||
		ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 0) != 30 || pod.Spec.SchedulerName != corev1.DefaultSchedulerName ||
		c.TerminationMessagePath != corev1.TerminationMessagePathDefault || c.TerminationMessagePolicy != corev1.TerminationMessageReadFile ||
		c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("pod not defaulted: %+v", pod.Spec)
	}
	if pod.Status.Phase != corev1.PodPending || pod.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("pod status at creation: %+v", pod.Status)
	}
	// A second pod on another node, and one with no node.
	for _, node := range []string{"node-b", ""} {
		p := pod.DeepCopy()
		p.ObjectMeta = metav1.ObjectMeta{GenerateName: "other-"}
		p.Spec.NodeName = node
		if _, err := client.CoreV1().Pods(ns.Name).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Invalid pods are refused with 422.
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}
	if _, err := client.CoreV1().Pods(ns.Name).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("invalid pod: %v, want 422", err)
	}

	list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Fatalf("pods on node-a: %d", len(list.Items))
	}
	if _, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nope=x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unknown field label: %v, want 400", err)
	}

	// The kubelet's watch: its node's pods, from the list's resourceVersion.
	w, err := client.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{
		FieldSelector: "spec.nodeName=node-a", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	patch := []byte(`{"metadata":{"labels":{"tier":"front"}}}`)
	if _, err := client.CoreV1().Pods(ns.Name).Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	if ev.Type != watch.Modified || ev.Object.(*corev1.Pod).Labels["tier"] != "front" {
		t.Fatalf("watch event %s %v", ev.Type, ev.Object.(*corev1.Pod).Labels)
	}

	// Status through the status subresource; a spec change there is ignored.
	status := []byte(`{"spec":{"activeDeadlineSeconds":5},"status":{"phase":"Running","podIP":"10.88.0.5","podIPs":[{"ip":"10.88.0.5"}]}}`)
	pod, err = client.CoreV1().Pods(ns.Name).Patch(ctx, "web", types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Spec.ActiveDeadlineSeconds != nil {
		t.Fatalf("after status patch: phase %q deadline %v", pod.Status.Phase, pod.Spec.ActiveDeadlineSeconds)
	}
	if ev := nextEvent(t, w); ev.Object.(*corev1.Pod).Status.PodIP != "10.88.0.5" {
		t.Fatalf("watch after status: %+v", ev.Object.(*corev1.Pod).Status)
	}
	// And a status change through the main resource is ignored.
	pod.Status.Phase = corev1.PodFailed
	pod, err = client.CoreV1().Pods(ns.Name).Update(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodRunning {
		t.Fatalf("status changed through the main resource: %q", pod.Status.Phase)
	}
	running, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running,metadata.namespace=" + ns.Name})
	if err != nil || len(running.Items) != 1 {
		t.Fatalf("running pods: %v %d", err, len(running.Items))
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf"}, Data: map[string]string{"a": "1"}}
	if _, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().ConfigMaps(ns.Name).Get(ctx, "conf", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "1" {
		t.Fatalf("configmap: %v %v", err, got)
	}
	if _, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want 409", err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "v"}}
	if sec, err = client.CoreV1().Secrets(ns.Name).Create(ctx, sec, metav1.CreateOptions{}); err != nil || sec.Type != corev1.SecretTypeOpaque || string(sec.Data["k"]) != "v" || sec.StringData != nil {
		t.Fatalf("secret: %v %+v", err, sec)
	}

	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To[int32](40)},
	}
	if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gotLease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil || ptr.Deref(gotLease.Spec.HolderIdentity, "") != "node-a" {
		t.Fatalf("lease: %v %+v", err, gotLease)
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if node, err = client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil || len(node.Status.Conditions) != 1 {
		t.Fatalf("node status: %v", err)
	}

	event := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: ns.Name},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns.Name, Name: "web", UID: pod.UID},
		Reason:         "Started", Type: corev1.EventTypeNormal,
	}
	if _, err := client.CoreV1().Events(ns.Name).Create(ctx, event, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	evs, err := client.CoreV1().Events(ns.Name).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,involvedObject.uid=" + string(pod.UID)})
	if err != nil || len(evs.Items) != 1 {
		t.Fatalf("events of web: %v %d", err, len(evs.Items))
	}

	// Graceful deletion: a scheduled, running pod gets a deletionTimestamp
	// and stays until its node deletes it with grace 0.
	if err := client.CoreV1().Pods(ns.Name).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err = client.CoreV1().Pods(ns.Name).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.DeletionTimestamp == nil || ptr.Deref(pod.DeletionGracePeriodSeconds, 0) != 30 {
		t.Fatalf("after delete: deletionTimestamp %v grace %v", pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Modified || ev.Object.(*corev1.Pod).DeletionTimestamp == nil {
		t.Fatalf("watch after delete: %s", ev.Type)
	}
	err = client.CoreV1().Pods(ns.Name).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil {
		t.Fatal(err)
	}
	// As kube-apiserver: the shortened grace period is written first
	// (MODIFIED, deletionGracePeriodSeconds 0), then the pod is deleted.
	ev = nextEvent(t, w)
	if ev.Type == watch.Modified && ptr.Deref(ev.Object.(*corev1.Pod).DeletionGracePeriodSeconds, -1) == 0 {
		ev = nextEvent(t, w)
	}
	if ev.Type != watch.Deleted {
		t.Fatalf("watch after final delete: %s", ev.Type)
	}
	if _, err := client.CoreV1().Pods(ns.Name).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted pod: %v, want 404", err)
	}
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event in 10s")
	}
	return watch.Event{}
}

func mustTransport(t *testing.T, cfg *rest.Config) http.RoundTripper {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
