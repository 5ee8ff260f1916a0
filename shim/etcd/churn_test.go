package etcd

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"

	"github.com/skiffnode/skiff/shim/etcd/internal/embed"
)

// The churn: pod-status-like updates of ~2 KB over a few hundred keys, a
// burst first (a node's pods restarting: 10,000 updates within one of the
// apiserver's compaction intervals), then a steady 500 per interval.
const (
	churnKeys    = 300
	churnValue   = 2 << 10
	churnBurst   = 10_000
	churnSteady  = 500
	churnUpdates = 20_000
	churnWriters = 32
)

// What the data directory may hold once the burst's history is compacted
// (file sizes as stat reports them; the bbolt file's growth step is
// sparse, so the disk holds less):
//
//   - db: in use, churnInUse at most (300 live values and the history the
//     apiserver's compaction keeps, two intervals at most: ~1,300 values,
//     measured 3.3-5.4 MB); needsDefrag leaves a file of at most that plus
//     defragMinFreeBytes, and bbolt grows its file 16 MiB (its
//     DefaultAllocSize) past what it needs: 30 MiB;
//   - WAL: etcd's 5 files (MaxWalFiles) once it has purged (the 10,000
//     entries since a disk snapshot fill 3 files of 8 MiB), the next one
//     preallocated, each past its size by at most one entry: 48.4 MiB;
//   - snapshot files (~7 KB, 5 kept) and slack: 1 MiB.
//
// 79.4 MiB in all (83.2 MB). Without defragmentation the db stays at the
// burst's size; with etcd's 64 MB WAL files the WAL alone holds 128 MB.
const (
	churnInUse     = 6 << 20
	boltGrowStep   = 16 << 20
	churnDBBound   = churnInUse + defragMinFreeBytes + boltGrowStep
	churnWALBound  = (embed.DefaultMaxWALs + 1) * (walSegmentBytes + 64<<10)
	churnDataBound = churnDBBound + churnWALBound + 1<<20
)

// TestDataDirBoundedThroughChurn (issue 33): through 20,000 updates, with
// the apiserver's compaction after each interval and the Server's
// maintenance step (defragIfNeeded, called where its loop would tick),
// the bbolt file is back under churnDBBound once the burst is compacted
// and stays there, defragmented once (the steady churn is left alone);
// after a restart (etcd purges WAL files at start, then every 30 s, which
// a churn compressed into seconds never reaches) the whole directory is
// under churnDataBound and holds every key's last value. Without the
// maintenance step the same churn ends over both bounds. ~3 s a row on two
// cores, ~9 s with -race.
func TestDataDirBoundedThroughChurn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		defrag  bool
		bounded bool
	}{
		{"maintained", true, true},
		{"never defragmented", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			start := time.Now()
			worstDB, defrags, last := churn(ctx, t, dir, tc.defrag)
			u := restarted(ctx, t, dir, last)
			t.Logf("%v: worst db after compaction %s, defragmentations %d; after restart %s",
				time.Since(start).Round(time.Millisecond), mb(worstDB), defrags, u)
			bounded := worstDB <= churnDBBound && u.total() <= churnDataBound
			if bounded != tc.bounded {
				t.Errorf("bounded = %v, want %v: worst db %s (bound %s), directory %s (bound %s)",
					bounded, tc.bounded, mb(worstDB), mb(churnDBBound), mb(u.total()), mb(churnDataBound))
			}
			if tc.defrag && defrags != 1 {
				t.Errorf("%d defragmentations, want 1 (after the burst, none in the steady churn)", defrags)
			}
		})
	}
}

// churn runs the churn on a member in dir, compacting after each interval
// as kube-apiserver's compactor does (to the revision it saw at the
// previous one), then, with defrag, calling the maintenance step. It
// returns the largest bbolt file after an interval whose compaction had
// freed the burst, the defragmentations, and each key's last value.
func churn(ctx context.Context, t *testing.T, dir string, defrag bool) (worstDB int64, defrags int, last map[string]string) {
	t.Helper()
	s, err := Start(ctx, Options{Dir: dir, DefragInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := newChurnWriter(s)
	defer w.close()
	var prev int64
	for i := 0; w.n < churnUpdates; i++ {
		n := churnSteady
		if i == 0 {
			n = churnBurst
		}
		w.put(ctx, t, n)
		rev := w.rev(ctx, t)
		if prev > 0 {
			w.compact(ctx, t, prev)
		}
		prev = rev
		b := s.e.Server.Backend()
		b.ForceCommit() // the compaction's freed pages counted now, not at the next 100 ms commit
		size, inUse, rss, alloc := b.Size(), b.SizeInUse(), rssFile(), totalAlloc()
		did := false
		if defrag {
			if did, err = s.defragIfNeeded(); err != nil {
				t.Fatal(err)
			}
		}
		u := usageOf(t, dir)
		if did {
			defrags++
			t.Logf("interval %d: defragmented %s (%s in use) -> %s, %s allocated meanwhile; RssFile %s -> %s",
				i, mb(size), mb(inUse), mb(b.Size()), mb(totalAlloc()-alloc), mb(rss), mb(rssFile()))
		}
		if i > 0 { // the burst's own interval keeps its history until the next compaction
			worstDB = max(worstDB, u.db)
		}
		if i <= 2 || w.n == churnUpdates {
			t.Logf("interval %d, %d updates: backend %s, %s in use; %s", i, w.n, mb(b.Size()), mb(b.SizeInUse()), u)
		}
	}
	return worstDB, defrags, w.last
}

// restarted starts a member on dir again, waits for etcd's WAL purge at
// start, checks that every key holds its last value, and returns the
// directory's usage.
func restarted(ctx context.Context, t *testing.T, dir string, last map[string]string) dirUsage {
	t.Helper()
	s, err := Start(ctx, Options{Dir: dir, DefragInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u := usageOf(t, dir)
	for deadline := time.Now().Add(10 * time.Second); u.walFiles > embed.DefaultMaxWALs; u = usageOf(t, dir) {
		if time.Now().After(deadline) {
			t.Fatalf("etcd kept %d WAL files 10 s after its start, want at most %d", u.walFiles, embed.DefaultMaxWALs)
		}
		time.Sleep(20 * time.Millisecond) // etcd's purge runs in its own goroutine at start
	}
	c := v3client.New(s.e.Server)
	defer c.Close()
	resp, err := c.Get(ctx, "/registry/pods/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != len(last) {
		t.Errorf("%d keys after the restart, want %d", len(resp.Kvs), len(last))
	}
	for _, kv := range resp.Kvs {
		if string(kv.Value) != last[string(kv.Key)] {
			t.Errorf("%s: not its last value after the restart", kv.Key)
		}
	}
	return u
}

// churnWriter writes the churn through an in-process client: update j
// goes to key j%churnKeys, and every key has one writer, so its last
// value is known.
type churnWriter struct {
	c    *clientv3.Client
	n    int
	last map[string]string
}

func newChurnWriter(s *Server) *churnWriter {
	return &churnWriter{c: v3client.New(s.e.Server), last: map[string]string{}}
}

func (w *churnWriter) close() { w.c.Close() }

// put writes n more updates, churnWriters at a time.
func (w *churnWriter) put(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	first := w.n
	var wg sync.WaitGroup
	errs := make(chan error, churnWriters)
	for g := range churnWriters {
		wg.Go(func() {
			for j := first; j < first+n; j++ {
				if j%churnKeys%churnWriters != g {
					continue
				}
				if _, err := w.c.Put(ctx, churnKey(j), churnVal(j)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for j := max(first, first+n-churnKeys); j < first+n; j++ {
		w.last[churnKey(j)] = churnVal(j)
	}
	w.n += n
}

// rev is the member's current revision.
func (w *churnWriter) rev(ctx context.Context, t *testing.T) int64 {
	t.Helper()
	resp, err := w.c.Get(ctx, "compact_probe")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// compact compacts at rev and waits until the backend has dropped the
// older revisions (the apiserver does not wait; its next interval is 5
// minutes away).
func (w *churnWriter) compact(ctx context.Context, t *testing.T, rev int64) {
	t.Helper()
	if _, err := w.c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
}

func churnKey(j int) string { return fmt.Sprintf("/registry/pods/default/pod-%03d", j%churnKeys) }

func churnVal(j int) string {
	head := fmt.Sprintf("update %d;", j)
	return head + strings.Repeat("s", churnValue-len(head))
}

// dirUsage is a member directory's file sizes as stat reports them, and
// the disk blocks they hold.
type dirUsage struct {
	db, wal, snap, other int64
	walFiles             int
	onDisk               int64
}

func (u dirUsage) total() int64 { return u.db + u.wal + u.snap + u.other }

func (u dirUsage) String() string {
	return fmt.Sprintf("directory %s (db %s, WAL %s in %d files, snapshots %s, other %s; %s on disk)",
		mb(u.total()), mb(u.db), mb(u.wal), u.walFiles, mb(u.snap), mb(u.other), mb(u.onDisk))
}

func usageOf(t *testing.T, dir string) dirUsage {
	t.Helper()
	var u dirUsage
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			u.onDisk += st.Blocks * 512
		}
		switch parent := filepath.Base(filepath.Dir(p)); {
		case parent == "snap" && d.Name() == "db":
			u.db += fi.Size()
		case parent == "snap":
			u.snap += fi.Size()
		case parent == "wal":
			u.wal += fi.Size()
			if strings.HasSuffix(d.Name(), ".wal") {
				u.walFiles++
			}
		default:
			u.other += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// totalAlloc is the bytes the process has allocated on its heap so far.
func totalAlloc() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.TotalAlloc)
}

// rssFile is the process's file-backed resident memory (bbolt's mapping
// among it), 0 where /proc/self/status does not say.
func rssFile() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb int64
		if _, err := fmt.Sscanf(sc.Text(), "RssFile: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	return 0
}
