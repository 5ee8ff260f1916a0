package apisource

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/internal/objects"
)

func newTestCopy(t *testing.T) (*OfflineCopy, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "offline")
	c, err := NewOfflineCopy(dir, discard)
	if err != nil {
		t.Fatal(err)
	}
	return c, dir
}

// offlineTestPod reads ConfigMap cm and Secret s of namespace ns.
func offlineTestPod(uid string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid), ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "c", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}}}}},
			Volumes:    []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1"},
	}
}

// files lists the copy's files, relative, with their modes.
func files(t *testing.T, dir string) map[string]os.FileMode {
	t.Helper()
	out := map[string]os.FileMode{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = info.Mode().Perm()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOfflineCopySavesAndPrunes_Issue33: the pods, their objects, tokens
// and service variables are saved 0600 in 0700 directories; a pod is saved
// without its status (but a terminal phase), resourceVersion and
// managedFields, and not written again when unchanged; what no listed pod
// reads is removed with the next list; LoadPods marks the pods.
func TestOfflineCopySavesAndPrunes_Issue33(t *testing.T) {
	c, dir := newTestCopy(t)
	if _, ok := c.LoadPods(); ok {
		t.Fatal("LoadPods of a new copy: ok, want no complete copy")
	}
	p1, p2 := offlineTestPod("u1"), offlineTestPod("u2")
	p2.Status.Phase = v1.PodSucceeded
	c.SavePods([]*v1.Pod{p1, p2})
	c.saveObject("configmaps", &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}, Data: map[string]string{"k": "v"}})
	c.saveObject("secrets", &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"pw": []byte("x")}})
	k := tokenKey{"ns", "default", "", 3600, "u1"}
	c.saveToken(k, &authnv1.TokenRequest{Status: authnv1.TokenRequestStatus{Token: "t1"}}, time.Now())
	c.saveServiceEnv("ns", true, []v1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "10.96.0.1"}})

	got := files(t, dir)
	for _, d := range []string{".", "pods", "configmaps", "secrets", "tokens", "services"} {
		if got[d] != 0o700 {
			t.Errorf("directory %s: mode %v, want 0700", d, got[d])
		}
	}
	want := []string{"complete", "pods/u1.json", "pods/u2.json", "configmaps/ns_cm.json", "secrets/ns_s.json", "tokens/" + tokenFile(k), "services/ns_links.json"}
	for _, f := range want {
		if m, ok := got[f]; !ok || m != 0o600 {
			t.Errorf("file %s: mode %v (present %t), want 0600", f, m, ok)
		}
	}
	if !strings.HasPrefix(tokenFile(k), "u1_") {
		t.Errorf("token file %q: want the pod UID first", tokenFile(k))
	}

	pods, ok := c.LoadPods()
	if !ok || len(pods) != 2 {
		t.Fatalf("LoadPods = %d pods, %t", len(pods), ok)
	}
	for _, p := range pods {
		if p.Annotations[OfflineCopyAnnotation] == "" || p.ResourceVersion != "" || p.ManagedFields != nil || p.Status.PodIP != "" {
			t.Errorf("loaded pod %s: annotations %v, rv %q, managedFields %v, status %+v", p.Name, p.Annotations, p.ResourceVersion, p.ManagedFields, p.Status)
		}
	}
	if pods[1].Status.Phase != v1.PodSucceeded || pods[0].Status.Phase != "" {
		t.Errorf("phases %q %q: want the terminal phase kept only", pods[0].Status.Phase, pods[1].Status.Phase)
	}
	if cm, err := c.ConfigMap("ns", "cm"); err != nil || cm.Data["k"] != "v" || cm.ManagedFields != nil {
		t.Errorf("ConfigMap = %+v, %v", cm, err)
	}
	if s, err := c.Secret("ns", "s"); err != nil || string(s.Data["pw"]) != "x" {
		t.Errorf("Secret = %+v, %v", s, err)
	}
	if _, err := c.Secret("ns", "absent"); !errors.Is(err, objects.ErrNotFound) {
		t.Errorf("absent Secret: %v, want NotFound", err)
	}
	if tr, ok := c.token(k); !ok || tr.Status.Token != "t1" {
		t.Errorf("token = %v, %t", tr, ok)
	}
	if env, ok := c.serviceEnv("ns", true); !ok || len(env) != 1 {
		t.Errorf("serviceEnv = %v, %t", env, ok)
	}

	// Unchanged: nothing is written again (a new object of the same
	// content, as after a restart, is compared with the file).
	before := modTimes(t, dir)
	time.Sleep(10 * time.Millisecond)
	same := offlineTestPod("u1")
	same.ResourceVersion, same.Status.PodIP = "8", "10.0.0.2"
	c.SavePods([]*v1.Pod{same, p2})
	c.saveObject("secrets", &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"pw": []byte("x")}})
	if after := modTimes(t, dir); !mapsEqual(before, after) {
		t.Errorf("an unchanged save rewrote files:\n before %v\n after  %v", before, after)
	}

	// u1 leaves: its pod and token go; cm and s stay (u2 reads them).
	c.SavePods([]*v1.Pod{p2})
	got = files(t, dir)
	for _, f := range []string{"pods/u1.json", "tokens/" + tokenFile(k)} {
		if _, ok := got[f]; ok {
			t.Errorf("%s kept after its pod left", f)
		}
	}
	// A pod reading nothing: the objects and services of ns go too.
	bare := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "other", UID: "u3"}}
	c.SavePods([]*v1.Pod{bare})
	got = files(t, dir)
	for _, f := range []string{"configmaps/ns_cm.json", "secrets/ns_s.json", "services/ns_links.json", "pods/u2.json"} {
		if _, ok := got[f]; ok {
			t.Errorf("%s kept though no pod reads it", f)
		}
	}
	c.deleteObject("configmaps", "ns", "absent") // no error for a missing one
	var none *OfflineCopy
	none.SavePods([]*v1.Pod{p1})
	if _, ok := none.LoadPods(); ok || none.Active() {
		t.Error("a nil copy has pods or is active")
	}
}

func modTimes(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for rel := range files(t, dir) {
		info, err := os.Stat(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if !info.IsDir() {
			out[rel] = info.ModTime()
		}
	}
	return out
}

func mapsEqual(a, b map[string]time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !b[k].Equal(v) {
			return false
		}
	}
	return true
}

// TestTokenWorthSaving: a rotated token is written to the copy only when
// the saved one has less than half the new one's validity left: a token
// extended to a year is saved about twice a year, a 1 h one at each
// rotation (48 min: 12 min left of the saved one).
func TestTokenWorthSaving(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	tok := func(left time.Duration) *authnv1.TokenRequest {
		return &authnv1.TokenRequest{Status: authnv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(now.Add(left))}}
	}
	year := 365 * 24 * time.Hour
	tests := []struct {
		name          string
		saved, issued time.Duration
		want          bool
	}{
		{"extended: saved 48 min ago", year - 48*time.Minute, year, false},
		{"extended: saved half a year ago", year/2 - time.Hour, year, true},
		{"one hour: at rotation", 12 * time.Minute, time.Hour, true},
		{"one hour: just saved", 59 * time.Minute, time.Hour, false},
		{"saved expired", -time.Minute, time.Hour, true},
	}
	for _, tt := range tests {
		if got := tokenWorthSaving(tok(tt.saved), tok(tt.issued), now); got != tt.want {
			t.Errorf("%s: %t, want %t", tt.name, got, tt.want)
		}
	}
}

// neverListed is an informer whose list always fails (an API server that
// does not answer) until answer is closed; then it lists pods.
func neverListed(answer <-chan struct{}, pods ...v1.Pod) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			select {
			case <-answer:
				return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: pods}, nil
			default:
				return nil, errors.New("connection refused")
			}
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), &v1.Pod{}, 0, cache.Indexers{})
}

// TestSourceRunsOfflineCopy_Issue33: with an API server that does not
// answer, the agent gets the copy's pods after OfflineStartAfter and the
// copy is active; once the API server lists, its pods replace them, the
// copy is saved from them and no longer active. Without a complete copy,
// the agent gets nothing until the list.
func TestSourceRunsOfflineCopy_Issue33(t *testing.T) {
	c, dir := newTestCopy(t)
	c.SavePods([]*v1.Pod{offlineTestPod("old")})
	answer := make(chan struct{})
	api := offlineTestPod("new")
	src := &Source{Informer: neverListed(answer, *api), Index: NewIndex(), Logger: discard, Offline: c, OfflineAfter: 100 * time.Millisecond}
	var mu sync.Mutex
	var lists [][]string
	sink := func(pods []*v1.Pod) {
		var names []string
		for _, p := range pods {
			n := string(p.UID)
			if _, ok := p.Annotations[OfflineCopyAnnotation]; ok {
				n += "(copy)"
			}
			names = append(names, n)
		}
		mu.Lock()
		lists = append(lists, names)
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = src.Run(ctx, sink) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the copy's pods", func() bool { mu.Lock(); defer mu.Unlock(); return len(lists) == 1 })
	if !c.Active() || !slices.Equal(lists[0], []string{"old(copy)"}) {
		t.Fatalf("lists %v, active %t: want the copy's pod, active", lists, c.Active())
	}
	close(answer)
	waitFor(t, "the API's pods", func() bool { mu.Lock(); defer mu.Unlock(); return len(lists) == 2 })
	if c.Active() || !slices.Equal(lists[1], []string{"new"}) {
		t.Errorf("lists %v, active %t: want the API's pod, not active", lists, c.Active())
	}
	if _, err := os.Stat(filepath.Join(dir, "pods", "old.json")); err == nil {
		t.Error("the copy kept the pod the API server no longer has")
	}
	if _, err := os.Stat(filepath.Join(dir, "pods", "new.json")); err != nil {
		t.Errorf("the API's pod was not saved: %v", err)
	}

	// A copy never completed: nothing until the API server lists.
	empty, _ := newTestCopy(t)
	src = &Source{Informer: neverListed(make(chan struct{})), Index: NewIndex(), Logger: discard, Offline: empty, OfflineAfter: 100 * time.Millisecond}
	got := make(chan int, 1)
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	_ = src.Run(ctx2, func(pods []*v1.Pod) { got <- len(pods) })
	select {
	case n := <-got:
		t.Errorf("without a complete copy the agent got %d pods", n)
	default:
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOfflineObjectsAndTokens_Issue33: while the pods run from the copy,
// an object whose watch has not listed comes from the copy at once; a
// token the API server does not issue comes from the copy while valid,
// and an expired one is an error saying when it expired.
func TestOfflineObjectsAndTokens_Issue33(t *testing.T) {
	c, _ := newTestCopy(t)
	c.saveObject("configmaps", &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "copy"}})
	c.setActive(true)
	m := NewObjectManager(offlineObjects{}, discard)
	m.Offline = c
	m.SetPods([]*v1.Pod{offlineTestPod("u1")})
	start := time.Now()
	cm, err := m.ConfigMap("ns", "cm")
	if err != nil || cm.Data["k"] != "copy" {
		t.Fatalf("ConfigMap = %v, %v; want the copy's", cm, err)
	}
	if d := time.Since(start); d > objectSyncWait/2 {
		t.Errorf("the copy's object took %v: want no wait for the watch", d)
	}

	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	api := &fakeTokenAPI{clock: clk}
	tm := NewTokenManager(api, clk, discard)
	tm.Offline = c
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
	if _, err := tm.Token(pod, "", 3600); err != nil {
		t.Fatal(err)
	}
	// A restart: a new manager, the API server down.
	api.err = errors.New("connection refused")
	tm = NewTokenManager(api, clk, discard)
	tm.Offline = c
	if got, err := tm.Token(pod, "", 3600); err != nil || got != "ns/sa#1" {
		t.Errorf("token offline = %q, %v; want the saved one", got, err)
	}
	clk.Step(2 * time.Hour)
	if !tm.check(clk.Now()) {
		t.Error("the expired token was dropped without a signal: its volume would keep it, with no event")
	}
	tm = NewTokenManager(api, clk, discard)
	tm.Offline = c
	_, err = tm.Token(pod, "", 3600)
	if err == nil || !strings.Contains(err.Error(), "expired at 1970-01-12T14:46:40Z") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("expired token: %v; want when it expired and the request's error", err)
	}
}

// offlineObjects is an API server that never answers object lists.
type offlineObjects struct{}

func (offlineObjects) ObjectInformer(string, string, string) cache.SharedIndexInformer {
	return neverListed(make(chan struct{}))
}

// TestOfflineCopyRetriesFailedWrites: a write that fails (here the
// directory is not one; on a node, a full disk) is kept and written by the
// next retry, as an object's watch may never deliver it again; one of an
// object no listed pod reads any more is dropped instead.
func TestOfflineCopyRetriesFailedWrites(t *testing.T) {
	c, dir := newTestCopy(t)
	cmDir := filepath.Join(dir, "configmaps")
	breakDir := func() {
		t.Helper()
		if err := os.RemoveAll(cmDir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cmDir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mendDir := func() {
		t.Helper()
		if err := os.Remove(cmDir); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(cmDir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	breakDir()
	c.saveObject("configmaps", &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"v": "after"}})
	mendDir()
	if _, err := c.ConfigMap("ns", "cm"); err == nil {
		t.Fatal("the ConfigMap is in the copy before the retry")
	}
	c.retryFailed()
	if cm, err := c.ConfigMap("ns", "cm"); err != nil || cm.Data["v"] != "after" {
		t.Fatalf("after the retry: %+v, %v", cm, err)
	}
	if len(c.failed) != 0 {
		t.Errorf("failed writes after a successful retry: %v", c.failed)
	}

	breakDir()
	c.saveObject("configmaps", &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unread", Namespace: "ns"}})
	mendDir()
	c.SavePods(nil) // no pod reads it any more
	c.retryFailed()
	if _, err := os.Stat(filepath.Join(cmDir, "ns_unread.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed write of an object no pod reads was retried: %v", err)
	}
}
