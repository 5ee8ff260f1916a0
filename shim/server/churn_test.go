package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Churn shape: rounds of an owner configmap with configmap and pod
// dependents (the pods held by a finalizer the test removes once the
// collector has marked them), deleted in the background by the garbage
// collector, plus a namespace emptied by the namespace controller: 1,016
// objects in all.
const (
	churnRounds        = 8
	churnChildCMs      = 80
	churnChildPods     = 20
	churnNamespaceCMs  = 150
	churnNamespacePods = 50
	churnWorkers       = 8
)

// Bounds on what churn may leave behind. Goroutines: the test opens 36
// watches, so a leak of one goroutine per watch (or per object) exceeds
// the slack; the figures are polled until they settle, since every
// consistent list served from a watch cache leaves a goroutine for 3 s
// (k8s.io/apiserver's watchCache.waitUntilFreshAndBlock: 17 of them right
// after the churn's last lists). etcd: keys (events aside, they live an hour) must
// come back exactly, the database's size in use within a few pages of
// bbolt's freelist bookkeeping after a compaction.
const (
	churnGoroutineSlack = 5
	churnDBInUseSlack   = 512 << 10
)

// TestShimChurnLeavesNothingBehind (issue 17: "1,000 objects churned leave
// no watch, goroutine or etcd growth behind"): goroutines, the server's
// open watch requests and etcd's keys and size in use, taken after start,
// come back within a small bound once 1,016 objects were created and
// deleted through the collector and the namespace controller, watches
// opened and closed, the controllers settled and etcd compacted. ~20-30 s
// on two shared cores, so not gated.
func TestShimChurnLeavesNothingBehind(t *testing.T) {
	s, cfg, _ := startShim(t)
	// client-go's default 5 QPS would make the churn last minutes.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 500, 1000
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	etcdc, err := clientv3.New(clientv3.Config{Endpoints: []string{s.etcd.ClientURL()}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcdc.Close()

	// The collector's informers and the first connections come up after
	// readiness: a first configmap through the collector, then a stable count.
	warmUp(ctx, t, client)
	before := takeChurnFigures(ctx, t, client, etcdc)
	t.Logf("before: %+v", before)

	for r := range churnRounds {
		churnRound(ctx, t, client, "default", r)
	}
	churnNamespace(ctx, t, client, "churn-ns")

	var after churnFigures
	deadline := time.Now().Add(90 * time.Second)
	for {
		after = takeChurnFigures(ctx, t, client, etcdc)
		if after.within(before) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("after:  %+v", after)
	if !after.within(before) {
		t.Errorf("churn left growth behind: before %+v, after %+v", before, after)
	}
}

// churnFigures are what churn must not grow.
type churnFigures struct {
	Goroutines int
	Watches    int   // apiserver_longrunning_requests{verb="WATCH"}
	Keys       int64 // etcd keys under /registry/ but events
	Events     int64
	DBInUse    int64 // bytes, after a compaction
	HeapInuse  uint64
}

// within: goroutines within the slack, no more watches or keys, the size
// in use within the slack. Heap is logged, not judged (the watch caches
// keep a window of events by design).
func (f churnFigures) within(base churnFigures) bool {
	return f.Goroutines <= base.Goroutines+churnGoroutineSlack &&
		f.Watches <= base.Watches &&
		f.Keys <= base.Keys &&
		f.DBInUse <= base.DBInUse+churnDBInUseSlack
}

func takeChurnFigures(ctx context.Context, t *testing.T, client kubernetes.Interface, etcdc *clientv3.Client) churnFigures {
	t.Helper()
	var f churnFigures
	f.Watches = openWatches(ctx, t, client)
	f.Keys, f.Events = registryKeys(ctx, t, etcdc)
	f.DBInUse = compactedSizeInUse(ctx, t, etcdc)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.HeapInuse = ms.HeapInuse
	f.Goroutines = runtime.NumGoroutine()
	return f
}

// warmUp lets the post-start controllers reach their steady state: a
// configmap owned by another is collected (the collector's informers are
// synced), then the goroutine count holds still for two seconds.
func warmUp(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	t.Helper()
	owner := createCM(ctx, t, client, "default", "warm-up-owner")
	createCM(ctx, t, client, "default", "warm-up-child", ownedBy(owner, false))
	deleteWith(ctx, t, client, "default", owner.Name, metav1.DeletePropagationBackground)
	waitGone(ctx, t, client, "default", "warm-up-child")
	last, stable := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(30 * time.Second); stable < 4 && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
}

// churnRound creates an owner configmap with configmap and pod dependents
// while four watches are open, deletes the owner in the background, waits
// for the collector to delete the configmaps and mark the pods, removes
// the pods' finalizer and waits for them to go.
func churnRound(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string, round int) {
	t.Helper()
	stop := openClientWatches(ctx, t, client, ns)
	defer stop()
	owner := createCM(ctx, t, client, ns, fmt.Sprintf("churn-%d", round))
	ref := ownerRef(owner, false)
	label := map[string]string{"churn": strconv.Itoa(round)}
	runParallel(t, churnChildCMs, func(i int) error {
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("churn-%d-cm-%d", round, i), Labels: label, OwnerReferences: []metav1.OwnerReference{ref},
		}, Data: map[string]string{"k": strings.Repeat("v", 256)}}, metav1.CreateOptions{})
		return err
	})
	runParallel(t, churnChildPods, func(i int) error {
		p := churnPod(fmt.Sprintf("churn-%d-pod-%d", round, i), label)
		p.OwnerReferences, p.Finalizers = []metav1.OwnerReference{ref}, []string{holdFinalizer}
		_, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	deleteWith(ctx, t, client, ns, owner.Name, metav1.DeletePropagationBackground)
	sel := metav1.ListOptions{LabelSelector: "churn=" + strconv.Itoa(round)}
	waitFor(ctx, t, "collector to delete the configmaps and mark the pods", func() (bool, error) {
		cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, sel)
		if err != nil || len(cms.Items) > 0 {
			return false, err
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, sel)
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})
	runParallel(t, churnChildPods, func(i int) error {
		_, err := client.CoreV1().Pods(ns).Patch(ctx, fmt.Sprintf("churn-%d-pod-%d", round, i),
			types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		return ignoreNotFound(err)
	})
	waitFor(ctx, t, "pods to go", func() (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, sel)
		return err == nil && len(pods.Items) == 0, err
	})
}

// churnNamespace fills a namespace and deletes it: the namespace
// controller empties it (after its 5 s delay) and the namespace goes.
func churnNamespace(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	stop := openClientWatches(ctx, t, client, ns)
	defer stop()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runParallel(t, churnNamespaceCMs, func(i int) error {
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "v"},
		}, metav1.CreateOptions{})
		return err
	})
	runParallel(t, churnNamespacePods, func(i int) error {
		_, err := client.CoreV1().Pods(ns).Create(ctx, churnPod(fmt.Sprintf("pod-%d", i), nil), metav1.CreateOptions{})
		return err
	})
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "namespace "+ns+" to go", func() (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// churnPod is an unscheduled pod: deleted at once (no node to wait for).
func churnPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
		}}},
	}
}

// openClientWatches opens watches as clients do (namespaced configmaps and
// pods, cluster-wide pods, namespaces), drains them, and returns the func
// that stops them and waits for the drains.
func openClientWatches(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) func() {
	t.Helper()
	opens := []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			return client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
		},
		func() (watch.Interface, error) { return client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{}) },
		func() (watch.Interface, error) {
			return client.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
		},
		func() (watch.Interface, error) { return client.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{}) },
	}
	var g errgroup.Group
	var watches []watch.Interface
	for _, open := range opens {
		w, err := open()
		if err != nil {
			t.Fatal(err)
		}
		watches = append(watches, w)
		g.Go(func() error {
			for range w.ResultChan() { //nolint:revive // draining
			}
			return nil
		})
	}
	return func() {
		for _, w := range watches {
			w.Stop()
		}
		_ = g.Wait()
	}
}

// runParallel runs f(0..n-1) on churnWorkers goroutines; the first error
// fails the test.
func runParallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(churnWorkers)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// openWatches sums the server's apiserver_longrunning_requests gauge for
// verb WATCH: the watch requests being served (the test's, the loopback
// informers', the collector's).
func openWatches(ctx context.Context, t *testing.T, client kubernetes.Interface) int {
	t.Helper()
	body, err := client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}

// registryKeys counts etcd's keys under /registry/, events apart.
func registryKeys(ctx context.Context, t *testing.T, etcdc *clientv3.Client) (keys, events int64) {
	t.Helper()
	all, err := etcdc.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	ev, err := etcdc.Get(ctx, "/registry/events/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return all.Count - ev.Count, ev.Count
}

// compactedSizeInUse compacts etcd at its current revision (as the
// server's own 5-minute compactor would), then reads the database's size
// in use once the backend has committed the freed pages.
func compactedSizeInUse(ctx context.Context, t *testing.T, etcdc *clientv3.Client) int64 {
	t.Helper()
	resp, err := etcdc.Get(ctx, "compact_probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := etcdc.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil &&
		!strings.Contains(err.Error(), "required revision has been compacted") {
		t.Fatal(err)
	}
	// The backend commits every 100 ms; read after that.
	time.Sleep(300 * time.Millisecond)
	st, err := etcdc.Status(ctx, etcdc.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	return st.DbSizeInUse
}
