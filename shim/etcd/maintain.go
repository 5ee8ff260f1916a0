package etcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// What keeps the member's data directory bounded (docs/decisions/0105):
//
//   - history: kube-apiserver compacts every 5 minutes (its storage
//     CompactionInterval, left at its default by shim/server), keeping
//     the revisions of the last interval; etcd's own compaction stays off;
//   - the bbolt file: compaction frees pages but bbolt never gives them
//     back to the file system; the Server's maintenance loop defragments
//     when most of the file is free (needsDefrag);
//   - the WAL: etcd keeps its 5 newest files (MaxWalFiles), more while
//     the entries since its last disk snapshot (every SnapshotCount
//     entries) need them, plus one preallocated ahead; walSegmentBytes
//     sizes them;
//   - snapshot files: etcd keeps 5 (MaxSnapFiles), ~7 KB each.

// DefaultDefragInterval is how often the Server checks whether its backend
// is worth defragmenting. The check reads two counters; a defragmentation
// follows only a burst of writes (needsDefrag). The apiserver compacts a
// burst's history 5-10 minutes after it, so the bbolt file is back to
// about its size in use 20 minutes after a burst at the latest.
const DefaultDefragInterval = 10 * time.Minute

// defragMinFreeBytes is the least a defragmentation must give back: it
// rewrites every page in use (wear) and blocks the member's reads and
// writes while it copies them.
const defragMinFreeBytes = 8 << 20

// walSegmentBytes is the size of one WAL file. etcd preallocates each
// file to this size (fallocate: on disk at once) and always keeps the next
// one preallocated, so its 64 MB made a fresh shim hold 128 MB of WAL and
// up to 384 MB after a few days; 8 MiB holds ~4,000 entries of ~2 KB.
const walSegmentBytes = 8 << 20

var walSegmentOnce sync.Once

// setWALSegmentSize sets etcd's WAL segment size, a process-wide variable
// (go.etcd.io/etcd/server/v3/storage/wal.SegmentSizeBytes), once, before
// the first member starts: every later Start happens after it.
func setWALSegmentSize() {
	walSegmentOnce.Do(func() { wal.SegmentSizeBytes = walSegmentBytes })
}

// needsDefrag reports whether a backend of size bytes, inUse of them in
// use, is worth defragmenting: at most half of it is in use (etcd's
// advice: defragment when dbSizeInUse is below 50% of dbSize) and it would
// give back at least defragMinFreeBytes. Under steady writes the
// apiserver's compaction frees about what the next interval reuses, so
// the file stays over half in use and is left alone; after a burst it is
// not.
func needsDefrag(size, inUse int64) bool {
	if inUse < 0 || inUse > size {
		return false
	}
	return size-inUse >= defragMinFreeBytes && inUse <= size/2
}

// defragIfNeeded defragments the member's backend when needsDefrag says
// so, as etcd's maintenance API (Defragment) does: the live pages are
// copied to a new file that replaces the old one, the member's reads and
// writes waiting meanwhile. It reports whether it defragmented; an error
// leaves the old file in use. Nothing is done once the member is stopping.
func (s *Server) defragIfNeeded() (bool, error) {
	select {
	case <-s.e.Server.StoppingNotify():
		return false, nil // a stopping member closes its backend
	default:
	}
	b := s.e.Server.Backend()
	size, inUse := b.Size(), b.SizeInUse()
	if !needsDefrag(size, inUse) {
		return false, nil
	}
	start := time.Now()
	if err := b.Defrag(); err != nil {
		return false, fmt.Errorf("defragment the embedded etcd: %w", err)
	}
	klog.InfoS("Defragmented the embedded etcd", "sizeBefore", size, "inUseBefore", inUse,
		"sizeAfter", b.Size(), "took", time.Since(start))
	return true, nil
}

// startMaintenance starts the Server's maintenance loop: defragIfNeeded
// every interval, until Close. The loop's context keeps ctx's values, not
// its end: the member lives until Close, not until Start's context ends.
func (s *Server) startMaintenance(ctx context.Context, clk clock.WithTicker, interval time.Duration) {
	ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	t := clk.NewTicker(interval)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer t.Stop()
		runEvery(ctx, t.C(), func() {
			if _, err := s.defragIfNeeded(); err != nil {
				klog.ErrorS(err, "Embedded etcd maintenance")
			}
		})
	}()
}

// runEvery calls step at each tick until ctx ends, and returns then; a
// step under way is finished first, and none starts once ctx has ended.
func runEvery(ctx context.Context, ticks <-chan time.Time, step func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		if ctx.Err() != nil {
			return
		}
		step()
	}
}
