package staticpods

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// TestInitialList: the first sink call carries every valid pod; hidden and
// editor files and subdirectories are ignored (H.14).
func TestInitialList(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml":      podManifest("a", "busybox"),
		"b.json":      `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
		"noext":       podManifest("c", "busybox"),
		"multi.yml":   podManifest("d", "busybox") + "---\n" + podManifest("e", "busybox"),
		".hidden":     podManifest("hidden", "busybox"),
		"a.yaml~":     podManifest("backup", "busybox"),
		".a.yaml.swp": "binary swap",
		"a.yaml.swp":  podManifest("swp", "busybox"),
		"a.swx":       podManifest("swx", "busybox"),
		"a.tmp":       podManifest("tmp", "busybox"),
		"4913":        "",
		"#a.yaml#":    podManifest("emacs", "busybox"),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "x.yaml"), []byte(podManifest("sub", "busybox")), 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, Config{Dir: dir})
	wantNames(t, h.next(), "default/a-node-1", "default/b-node-1", "default/c-node-1", "default/d-node-1", "default/e-node-1")
	if errs := h.src.Errors(); len(errs) != 0 {
		t.Errorf("Errors() = %v, want none", errs)
	}
}

// TestInitialSyncWhenEmpty: the first call happens even with no pods, also
// when the directory does not exist.
func TestInitialSyncWhenEmpty(t *testing.T) {
	for name, dir := range map[string]string{"empty": t.TempDir(), "missing": filepath.Join(t.TempDir(), "nope")} {
		t.Run(name, func(t *testing.T) {
			h := start(t, Config{Dir: dir})
			if pods := h.next(); len(pods) != 0 {
				t.Errorf("initial pods = %v, want none", podNames(pods))
			}
		})
	}
}

// TestAddEditDelete: each change yields one sink call with the full new set
// (A.2 level-triggered).
func TestAddEditDelete(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "keep.yaml"), podManifest("keep", "busybox"))
	h := start(t, Config{Dir: dir})
	wantNames(t, h.next(), "default/keep-node-1")

	path := filepath.Join(dir, "web.yaml")
	writeAtomic(t, path, podManifest("web", "nginx:1"))
	pods := h.next()
	wantNames(t, pods, "default/keep-node-1", "default/web-node-1")
	oldUID := uidOf(t, pods, "web-node-1")

	writeAtomic(t, path, podManifest("web", "nginx:2"))
	pods = h.next()
	wantNames(t, pods, "default/keep-node-1", "default/web-node-1")
	if got := podByName(t, pods, "web-node-1").Spec.Containers[0].Image; got != "nginx:2" {
		t.Errorf("image after edit = %q, want nginx:2", got)
	}
	if uidOf(t, pods, "web-node-1") == oldUID {
		t.Errorf("UID unchanged after the content changed (A.3: a changed static pod is a new pod)")
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	wantNames(t, h.next(), "default/keep-node-1")
}

// TestNoCallWithoutChange: re-lists, rewrites with identical content and
// ignored files do not call the sink (config.seen must not count).
func TestNoCallWithoutChange(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeAtomic(t, path, podManifest("web", "busybox"))
	h := start(t, Config{Dir: dir, Resync: 10 * time.Millisecond, Debounce: 10 * time.Millisecond})
	wantNames(t, h.next(), "default/web-node-1")
	writeAtomic(t, path, podManifest("web", "busybox"))
	writeAtomic(t, filepath.Join(dir, "x.yaml~"), podManifest("other", "busybox"))
	h.expectNoCall(300 * time.Millisecond)
}

// TestHalfWrittenFile: a file written in two steps within the debounce
// window yields exactly the complete pod and no error.
func TestHalfWrittenFile(t *testing.T) {
	dir := t.TempDir()
	h := start(t, Config{Dir: dir, Debounce: time.Second})
	if pods := h.next(); len(pods) != 0 {
		t.Fatalf("initial pods = %v", podNames(pods))
	}
	content := podManifest("web", "busybox:1.36")
	cut := strings.Index(content, "image:") + len("image: busy")
	path := filepath.Join(dir, "web.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content[:cut]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // a slow writer, well inside the 1s window
	if _, err := f.WriteString(content[cut:]); err != nil {
		t.Fatal(err)
	}
	pods := h.next()
	wantNames(t, pods, "default/web-node-1")
	if got := pods[0].Spec.Containers[0].Image; got != "busybox:1.36" {
		t.Errorf("image = %q, want busybox:1.36 (a partial file was read)", got)
	}
	if logged := h.logs.errorsFor(""); len(logged) != 0 {
		t.Errorf("errors logged for a half-written file: %v", logged)
	}
	if errs := h.src.Errors(); len(errs) != 0 {
		t.Errorf("Errors() = %v, want none", errs)
	}
}

// TestBadFileIsolated: a bad file contributes no pods, does not affect other
// files, is reported by Errors with file and field path, and is logged once.
func TestBadFileIsolated(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeAtomic(t, filepath.Join(dir, "good.yaml"), podManifest("good", "busybox"))
	writeAtomic(t, bad, strings.Replace(podManifest("bad", "busybox"), "    image: busybox\n", "", 1))
	h := start(t, Config{Dir: dir, Resync: 10 * time.Millisecond})
	wantNames(t, h.next(), "default/good-node-1")

	err := h.src.Errors()[bad]
	want := bad + ": spec.containers[0].image: Required value"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Errors()[bad.yaml] = %v, want it to contain %q", err, want)
	}
	// Trigger more listings (resync every 10ms, plus the add) and check the
	// error is still logged once.
	writeAtomic(t, filepath.Join(dir, "more.yaml"), podManifest("more", "busybox"))
	wantNames(t, h.next(), "default/good-node-1", "default/more-node-1")
	if logged := h.logs.errorsFor(bad); len(logged) != 1 {
		t.Errorf("bad file logged %d times, want once: %v", len(logged), logged)
	}
}

// TestGoodFileTurnsBad: like the kubelet, nothing of a file that no longer
// parses is kept; fixing it brings the pod back.
func TestGoodFileTurnsBad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeAtomic(t, path, podManifest("web", "busybox"))
	h := start(t, Config{Dir: dir})
	wantNames(t, h.next(), "default/web-node-1")

	writeAtomic(t, path, "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, image: x, imagee: y}]}\n")
	wantNames(t, h.next())
	if err := h.src.Errors()[path]; err == nil || !strings.Contains(err.Error(), `unknown field "spec.containers[0].imagee"`) {
		t.Errorf("Errors()[web.yaml] = %v, want the unknown field", err)
	}

	writeAtomic(t, path, podManifest("web", "busybox"))
	wantNames(t, h.next(), "default/web-node-1")
	if errs := h.src.Errors(); len(errs) != 0 {
		t.Errorf("Errors() after fix = %v, want none", errs)
	}
}

// TestDuplicateNames: the first file in name order wins; the later one is
// rejected with an error naming both files.
func TestDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "b.yaml"), podManifest("web", "second"))
	writeAtomic(t, filepath.Join(dir, "a.yaml"), podManifest("web", "first"))
	h := start(t, Config{Dir: dir})
	pods := h.next()
	wantNames(t, pods, "default/web-node-1")
	if got := pods[0].Spec.Containers[0].Image; got != "first" {
		t.Errorf("kept image %q, want the one from a.yaml", got)
	}
	err := h.src.Errors()[filepath.Join(dir, "b.yaml")]
	if err == nil || !strings.Contains(err.Error(), "already defined by "+filepath.Join(dir, "a.yaml")) {
		t.Errorf("Errors()[b.yaml] = %v, want a duplicate error naming a.yaml", err)
	}
}

// TestDirectoryCreatedLaterAndRemoved: a missing directory is watched for,
// and removing it removes its pods.
func TestDirectoryCreatedLaterAndRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	h := start(t, Config{Dir: dir})
	wantNames(t, h.next())

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(dir, "web.yaml"), podManifest("web", "busybox"))
	wantNames(t, h.next(), "default/web-node-1")

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	wantNames(t, h.next())

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(dir, "again.yaml"), podManifest("again", "busybox"))
	wantNames(t, h.next(), "default/again-node-1")
}

func TestLeaves(t *testing.T) {
	tests := []struct {
		op   fsnotify.Op
		want bool
	}{
		{fsnotify.Remove, true},
		{fsnotify.Rename, true},
		{fsnotify.Create, false},
		{fsnotify.Write, false},
		{fsnotify.Chmod, false},
		{fsnotify.Remove | fsnotify.Create, false},
	}
	for _, tc := range tests {
		if got := leaves(fsnotify.Event{Name: "/d/f.yaml", Op: tc.op}); got != tc.want {
			t.Errorf("leaves(%v) = %v, want %v", tc.op, got, tc.want)
		}
	}
}

// TestQuietPeriod: a burst of removals is read after Debounce/5 (a deleted
// manifest's pod gets its SIGTERM at once, issue 5), any other event in the
// burst makes it the full Debounce.
func TestQuietPeriod(t *testing.T) {
	const d = 100 * time.Millisecond
	tests := []struct {
		name   string
		events []bool // quick, in order
		want   time.Duration
	}{
		{"one removal", []bool{true}, d / 5},
		{"removals only", []bool{true, true, true}, d / 5},
		{"a write", []bool{false}, d},
		{"removal then write (rm f; cp g f)", []bool{true, false}, d},
		{"write then removal", []bool{false, true}, d},
	}
	for _, tc := range tests {
		l := &loop{s: &Source{cfg: Config{Debounce: d}}, debounce: time.NewTimer(time.Hour)}
		for _, quick := range tc.events {
			l.arm(quick)
		}
		l.debounce.Stop()
		if got := l.quiet(); got != tc.want {
			t.Errorf("%s: quiet period %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRemoveThenRewriteIsAnEdit: a manifest removed and written again at
// once (a script's `rm f; cp g f`) is one edit: the sink never sees the
// pod gone.
func TestRemoveThenRewriteIsAnEdit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeAtomic(t, path, podManifest("web", "nginx:1"))
	h := start(t, Config{Dir: dir, Debounce: time.Second})
	wantNames(t, h.next(), "default/web-node-1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(podManifest("web", "nginx:2")), 0o644); err != nil {
		t.Fatal(err)
	}
	pods := h.next()
	wantNames(t, pods, "default/web-node-1")
	if got := pods[0].Spec.Containers[0].Image; got != "nginx:2" {
		t.Errorf("image = %q, want nginx:2", got)
	}
}
