package staticpods

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestFileSettling: only a rename into the directory says the file
// arrived whole; a removal or a close settles it, anything else does not.
func TestFileSettling(t *testing.T) {
	tests := []struct {
		mask uint32
		want settling
	}{
		{unix.IN_MOVED_TO, arrivedWhole},
		{unix.IN_DELETE, settledFile},
		{unix.IN_MOVED_FROM, settledFile},
		{unix.IN_CLOSE_WRITE, settledFile},
		{unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE, settledFile},
		{unix.IN_CREATE, unsettled},
		{unix.IN_MODIFY, unsettled},
		{unix.IN_ATTRIB, unsettled},
		{unix.IN_MOVED_TO | unix.IN_ATTRIB, unsettled},
		{unix.IN_MODIFY | unix.IN_CLOSE_WRITE, unsettled},
		{0, unsettled},
	}
	for _, tc := range tests {
		if got := fileSettling(dirEvent{Name: "/d/f.yaml", Mask: tc.mask}); got != tc.want {
			t.Errorf("fileSettling(%#x) = %v, want %v", tc.mask, got, tc.want)
		}
	}
}

// TestQuietPeriod: a burst whose every file is settled (removed, or
// closed by its writer) is read after Debounce/5 (a deleted manifest's pod
// gets its SIGTERM at once: issue 5); one whose every file was renamed in
// whole after Debounce/50 (a new pod starts at once: issue 35); a file
// still open for writing makes it the full Debounce.
func TestQuietPeriod(t *testing.T) {
	const d = 100 * time.Millisecond
	const (
		open   = unsettled
		closed = settledFile
		gone   = settledFile
		whole  = arrivedWhole
	)
	type ev struct {
		file string
		s    settling
	}
	tests := []struct {
		name   string
		events []ev
		want   time.Duration
	}{
		{"one removal", []ev{{"a", gone}}, d / 5},
		{"removals only", []ev{{"a", gone}, {"b", gone}, {"c", gone}}, d / 5},
		{"a write", []ev{{"a", open}}, d},
		{"create, write, close (cp)", []ev{{"a", open}, {"a", open}, {"a", closed}}, d / 5},
		{"removal then rewrite (rm f; cp g f)", []ev{{"a", gone}, {"a", open}, {"a", closed}}, d / 5},
		{"one file closed, another still open", []ev{{"a", open}, {"b", open}, {"a", closed}}, d},
		{"closed, then written again", []ev{{"a", closed}, {"a", open}}, d},
		{"not about a file (re-list)", []ev{{"a", gone}, {"", open}}, d},
		{"renamed in (mv tmp f)", []ev{{"a", whole}}, d / 50},
		{"renames in only", []ev{{"a", whole}, {"b", whole}, {"c", whole}}, d / 50},
		{"removal then rename in (rm f; mv tmp f)", []ev{{"a", gone}, {"a", whole}}, d / 50},
		{"renamed in, another removed", []ev{{"a", whole}, {"b", gone}}, d / 5},
		{"removed, another renamed in", []ev{{"b", gone}, {"a", whole}}, d / 5},
		{"renamed in, another still open", []ev{{"a", whole}, {"b", open}}, d},
		{"renamed in, then written in place", []ev{{"a", whole}, {"a", open}}, d},
		{"renamed in, then a re-list", []ev{{"a", whole}, {"", open}}, d},
	}
	for _, tc := range tests {
		l := &loop{s: &Source{cfg: Config{Debounce: d}}, debounce: time.NewTimer(time.Hour)}
		for _, e := range tc.events {
			l.arm(e.file, e.s)
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

// TestRemoveThenRenameInIsAnEdit: a manifest removed and then replaced by
// a rename (`rm f; mv tmp f`) is one edit, though a burst that ends in
// renames is read after only Debounce/50: the removal's event waits the
// removal's quiet period, and the rename, its file's latest event, finds
// the new manifest.
func TestRemoveThenRenameInIsAnEdit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeAtomic(t, path, podManifest("web", "nginx:1"))
	h := start(t, Config{Dir: dir, Debounce: time.Second})
	wantNames(t, h.next(), "default/web-node-1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, path, podManifest("web", "nginx:2"))
	pods := h.next()
	wantNames(t, pods, "default/web-node-1")
	if got := pods[0].Spec.Containers[0].Image; got != "nginx:2" {
		t.Errorf("image = %q, want nginx:2", got)
	}
}

// TestSettledFilesReadEarly: a manifest renamed into the directory (after
// Debounce/50), or written and closed (Debounce/5), is read early, not
// after the full Debounce
// (issue 5, startup: the debounce was most of skiff's lead over the bare
// CRI calls); a file still open keeps the full debounce (TestHalfWrittenFile).
func TestSettledFilesReadEarly(t *testing.T) {
	const debounce = 10 * time.Second // settled: 2 s
	dir := t.TempDir()
	h := start(t, Config{Dir: dir, Debounce: debounce})
	wantNames(t, h.next())
	for _, tc := range []struct {
		name  string
		write func(path string)
	}{
		{"renamed in", func(path string) { writeAtomic(t, path, podManifest("a", "busybox")) }},
		{"written and closed", func(path string) {
			if err := os.WriteFile(path, []byte(podManifest("b", "busybox")), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		began := time.Now()
		tc.write(filepath.Join(dir, tc.name+".yaml"))
		h.next()
		if took := time.Since(began); took >= debounce/2 {
			t.Errorf("%s: read after %v, want about %v (Debounce/5)", tc.name, took, debounce/5)
		}
	}
}
