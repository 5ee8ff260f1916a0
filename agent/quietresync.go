package agent

// maxQuietResyncs is how many resyncs in a row a worker may skip (see
// canSkipResync): every (maxQuietResyncs+1)th resync is a full one, i.e.
// one full resync every 5 ResyncPeriods (5 minutes by default).
const maxQuietResyncs = 4

// relistMark is what a worker knows of the relist at one moment: how many
// listings had succeeded (relistLoop.listings) and how many of them found the
// pod's runtime state changed (podWorker.relistChanges).
type relistMark struct {
	listings, changes uint64
}

// resyncState is what a worker keeps between its syncs to decide whether a
// due resync may skip its runtime calls. Owned by the worker goroutine.
type resyncState struct {
	// idle: the last full sync observed the runtime and left nothing
	// pending (no progress, retry, back-off requeue or deadline), so its
	// next sync was the resync.
	idle bool
	// mark was taken just before that sync observed the runtime.
	mark relistMark
	// skipped counts the resyncs skipped since that sync.
	skipped int
}

// canSkipResync reports whether a resync that falls due in state s, with
// the relist now at now, may skip its runtime calls (and publishes nothing,
// since nothing it computes from changed). Pure.
//
// A sync costs four CRI calls per pod (list and status of sandboxes and
// containers); at 110 pods the 1-minute resyncs were ~36 % of the agent's
// steady CRI calls (issue 13). The relist already lists every pod's
// sandboxes and containers every RelistPeriod and fingerprints their IDs
// and states, so a resync only learns something new when:
//
//   - the relist found the pod changed (or gone) since the sync's mark:
//     changes differ, so the resync is full (the relist also wakes the
//     worker of a changed pod, so this is only a second net);
//   - the relist has not seen the runtime since that sync observed it
//     (relist failing or stalled): it must have completed two listings
//     since the mark, so that at least one listing started after the mark
//     was taken, i.e. after the sync's state was current;
//   - the change is one the fingerprint cannot see: a status field that
//     is neither an ID nor a state, a 2^-64 hash collision, a change the
//     runtime makes behind the lists. Every (maxQuietResyncs+1)th resync
//     is full for that, so such a change is still caught, within 5
//     ResyncPeriods instead of one.
//
// Anything else that makes a sync do something (a pod kill, a probe
// result, an image import, a back-off or retry, a deadline) wakes the
// worker or sets a timer other than the resync, and those syncs are
// always full.
func canSkipResync(s resyncState, now relistMark) bool {
	return s.idle && s.skipped < maxQuietResyncs &&
		now.changes == s.mark.changes &&
		now.listings >= s.mark.listings+2
}

// relistMark returns the worker's current relistMark; safe for concurrent
// use. Without a relist counter (workers driven alone, in tests) listings
// stays 0, so no resync is ever skipped.
func (w *podWorker) relistMark() relistMark {
	m := relistMark{changes: w.relistChanges.Load()}
	if w.d.relisted != nil {
		m.listings = w.d.relisted.Load()
	}
	return m
}
