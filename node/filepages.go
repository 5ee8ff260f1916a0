package node

import (
	"context"
	"time"

	"github.com/skiffnode/skiff/internal/filepages"
)

// releasePagesAfter is how long after Run starts the agent first unmaps
// its executable's pages and drops those it does not use from the page
// cache (filepages.Release): start-up and the recovery of running pods
// are over by then. releasePagesEvery it unmaps them again, so that what a
// burst of pods touched stops counting in the agent's resident set once
// the burst is over (decision 120).
const (
	releasePagesAfter = 10 * time.Second
	releasePagesEvery = 30 * time.Second
)

// releaseFilePages is the loop that releases the executable's pages until
// ctx ends; a failure is logged, nothing else.
func (n *Node) releaseFilePages(ctx context.Context) {
	filepages.Periodically(ctx, releasePagesAfter, releasePagesEvery, func(released uint64, err error) {
		if err != nil {
			n.log.Warn("release the executable's file pages", "err", err)
			return
		}
		n.log.Debug("released the executable's file pages", "bytes", released)
	})
}
