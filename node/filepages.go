package node

import (
	"context"

	"github.com/skiffnode/skiff/internal/filepages"
)

// releaseFilePages is the loop that releases the executable's pages until
// ctx ends (filepages.After after start, then every filepages.Every;
// decision 120); a failure is logged, nothing else.
func (n *Node) releaseFilePages(ctx context.Context) {
	filepages.Periodically(ctx, filepages.After, filepages.Every, func(released uint64, err error) {
		if err != nil {
			n.log.Warn("release the executable's file pages", "err", err)
			return
		}
		n.log.Debug("released the executable's file pages", "bytes", released)
	})
}
