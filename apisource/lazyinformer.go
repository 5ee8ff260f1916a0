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

// synced starts the informer if it is not running and waits, at most
// syncWait, for its first listing; the error is the kubelet's.
func (l *lazyInformer) synced() error {
	l.once.Do(func() { close(l.start) })
	if l.HasSynced() {
		return nil
	}
	timeout := make(chan struct{})
	timer := time.AfterFunc(l.syncWait, func() { close(timeout) })
	defer timer.Stop()
	if !cache.WaitForCacheSync(timeout, l.HasSynced) {
		return fmt.Errorf("%s informer has not yet synced", l.what)
	}
	return nil
}
