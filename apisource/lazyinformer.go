package apisource

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
)

// lazyInformerSyncWait bounds how long the first read waits for a lazy
// informer's first listing (the kubelet's lazy ClusterTrustBundle manager
// waits as long).
const lazyInformerSyncWait = 10 * time.Second

// lazyInformer is an informer that runs from its first read on: most
// nodes never mount a ClusterTrustBundle or a pod certificate, and need
// not watch them. what names it in errors.
type lazyInformer struct {
	cache.SharedIndexInformer
	what     string
	syncWait time.Duration
	start    chan struct{}
	once     sync.Once
}

func newLazyInformer(inf cache.SharedIndexInformer, what string) *lazyInformer {
	return &lazyInformer{SharedIndexInformer: inf, what: what, syncWait: lazyInformerSyncWait, start: make(chan struct{})}
}

// waitStart blocks until the first read (true) or ctx is done (false).
func (l *lazyInformer) waitStart(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-l.start:
		return true
	}
}

// synced starts the informer if it is not running; the call that starts
// it waits, at most syncWait, for its first listing (as the kubelet's
// lazy manager), later ones fail at once while it has not listed. The
// error is the kubelet's.
func (l *lazyInformer) synced() error {
	l.once.Do(func() {
		close(l.start)
		timeout := make(chan struct{})
		timer := time.AfterFunc(l.syncWait, func() { close(timeout) })
		defer timer.Stop()
		cache.WaitForCacheSync(timeout, l.HasSynced)
	})
	if !l.HasSynced() {
		return fmt.Errorf("%s informer has not yet synced", l.what)
	}
	return nil
}
