package server

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestReleaseFilePages: the call unmaps the test binary's read-only
// mappings (tens of MB released), the process goes on running, and its
// RssFile (the mapped file pages) is lower afterwards than before.
func TestReleaseFilePages(t *testing.T) {
	before := rssFileKiB(t)
	released, err := releaseFilePages()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKiB(t)
	t.Logf("released %d bytes of mappings; RssFile %d -> %d KiB", released, before, after)
	if released < 1<<20 {
		t.Errorf("released %d bytes, want the executable's code and read-only data", released)
	}
	if after >= before {
		t.Errorf("RssFile %d KiB after, %d KiB before: want less", after, before)
	}
}

// TestReleasable: only read-only mappings of the executable and shared
// read-only file mappings lose their pages.
func TestReleasable(t *testing.T) {
	const exe = "/bin/skiff-apiserver"
	for _, c := range []struct {
		perms, path string
		want        bool
	}{
		{"r-xp", exe, true},
		{"r--p", exe, true},
		{"rw-p", exe, false},
		{"r--s", "/var/lib/skiff/apiserver/etcd/member/snap/db", true},
		{"rw-s", "/var/lib/skiff/apiserver/etcd/member/snap/db", false},
		{"r--p", "/usr/lib/libc.so.6", false},
		{"r--s", "[vvar]", false},
		{"---p", exe, false},
	} {
		if got := releasable(c.perms, c.path, exe); got != c.want {
			t.Errorf("releasable(%q, %q) = %v, want %v", c.perms, c.path, got, c.want)
		}
	}
}

// rssFileKiB is this process's RssFile from /proc/self/status.
func rssFileKiB(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("RssFile %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
