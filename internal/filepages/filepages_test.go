package filepages

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRelease: the call unmaps the test binary's read-only
// mappings (tens of MB released), the process goes on running, and its
// RssFile (the mapped file pages) is lower afterwards than before.
func TestRelease(t *testing.T) {
	before := rssFileKiB(t)
	released, err := Release(false)
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

// TestReleaseEvicts: with evict, the executable's pages that no
// process uses leave the page cache (mincore of a fresh mapping of the
// file), where writing it cached them all before. The eviction runs in a
// child process started from a fresh copy of this test binary, which no
// other process maps and whose pages are all dirty (the call writes them
// before dropping them). The copy has padding appended that no process
// maps (an ELF file's loader ignores it), so that the figure does not
// depend on how much of a small test binary its child maps.
func TestReleaseEvicts(t *testing.T) {
	if os.Getenv(evictChildEnv) == "1" {
		if _, err := Release(true); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}

		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is on tmpfs, whose pages cannot leave the page cache")
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "evict.test")
	data = append(data, make([]byte, evictPadding)...)
	if err := os.WriteFile(cp, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if before := cachedFraction(t, cp); before < 0.9 {
		t.Skipf("only %.0f%% of the copy cached after writing it", before*100)
	}
	out, err := runChild(cp)
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	after := cachedFraction(t, cp)
	t.Logf("%d bytes; cached after eviction: %.0f%%", len(data), after*100)
	// Not near 0: the kernel caches a file in large folios (up to 2 MB),
	// and one that the child maps while evicting (the code it runs)
	// stays whole.
	if after > 0.4 {
		t.Errorf("%.0f%% of the executable still cached after eviction, want the pages in use only", after*100)
	}
}

// runChild runs the test binary at path as the evicting child. A fork of
// another goroutine may still hold the just-written file open for writing
// (ETXTBSY), so that error is retried.
func runChild(path string) ([]byte, error) {
	for i := 0; ; i++ {
		child := exec.Command(path, "-test.run=^TestReleaseEvicts$")
		child.Env = append(os.Environ(), evictChildEnv+"=1")
		out, err := child.CombinedOutput()
		if errors.Is(err, syscall.ETXTBSY) && i < 10 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return out, err
	}
}

// evictPadding is how many bytes the evicting child's copy has appended.
const evictPadding = 64 << 20

// evictChildEnv makes TestReleaseEvicts the child that evicts.
const evictChildEnv = "SKIFF_TEST_EVICT_CHILD"

// cachedFraction is the fraction of path's pages in the page cache.
func cachedFraction(t *testing.T, path string) float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(m) }()
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return float64(n) / float64(len(vec))
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
