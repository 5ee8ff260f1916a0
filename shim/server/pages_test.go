package server

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestReleaseExecutablePages: the call unmaps the test binary's read-only
// mappings (tens of MB released), the process goes on running, and its
// RssFile (the mapped file pages) is lower afterwards than before.
func TestReleaseExecutablePages(t *testing.T) {
	before := rssFileKiB(t)
	released, err := releaseExecutablePages()
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
