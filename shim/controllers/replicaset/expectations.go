package replicaset

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// expectationsTTL is upstream's ExpectationsTimeout: expectations older
// than this are considered satisfied (a lost watch event must not stall a
// ReplicaSet forever).
const expectationsTTL = 5 * time.Minute

// expectations remember, per ReplicaSet key, how many pod creations the
// controller has yet to see in its informer and which pods it has deleted
// and not yet seen go (upstream's UIDTrackingControllerExpectations,
// pkg/controller/controller_utils.go, keyed by pod key rather than UID).
// Until they are met, a sync only updates the status: the cache would
// show too few or too many pods and the controller would act twice.
type expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	byKey map[string]*expectation
}

type expectation struct {
	adds      int
	deletions map[string]bool
	at        time.Time
}

func newExpectations(clk clock.PassiveClock) *expectations {
	return &expectations{clock: clk, byKey: map[string]*expectation{}}
}

// satisfied is true when nothing is pending for key, or the expectation
// expired, or none was ever set.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.byKey[key]
	if !ok {
		return true
	}
	return (x.adds <= 0 && len(x.deletions) == 0) || e.clock.Since(x.at) > expectationsTTL
}

// expectCreations records n pod creations about to be made for key.
func (e *expectations) expectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byKey[key] = &expectation{adds: n, at: e.clock.Now()}
}

// expectDeletions records the pod keys about to be deleted for key.
func (e *expectations) expectDeletions(key string, pods []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{deletions: make(map[string]bool, len(pods)), at: e.clock.Now()}
	for _, p := range pods {
		x.deletions[p] = true
	}
	e.byKey[key] = x
}

// creationObserved lowers key's pending creations by one.
func (e *expectations) creationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.byKey[key]; ok {
		x.adds--
	}
}

// deletionObserved marks pod's deletion as seen; seeing it twice (the
// deletionTimestamp, then the delete) counts once.
func (e *expectations) deletionObserved(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.byKey[key]; ok {
		delete(x.deletions, pod)
	}
}

// forget drops key's expectations (the ReplicaSet is gone).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}
