package containerd

import (
	"context"
	"fmt"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/pkg/namespaces"
)

// DownloadCounter returns a counter of the bytes containerd has downloaded
// into its content store (the CRI plugin's namespace) since the call: the
// active ingests' offsets, plus the sizes of ingests that finished between
// two calls. It counts every pull in flight, not one image's. The counter
// is not safe for concurrent use; each call lists the ingests once.
func (i *Importer) DownloadCounter() func(ctx context.Context) (int64, error) {
	var t downloadTracker
	return func(ctx context.Context) (int64, error) {
		st, err := i.client.ContentStore().ListStatuses(namespaces.WithNamespace(ctx, Namespace))
		if err != nil {
			return 0, fmt.Errorf("list content ingests: %w", err)
		}
		return t.update(st), nil
	}
}

// downloadTracker sums the bytes of the ingests it sees over time.
type downloadTracker struct {
	active map[string]content.Status // by ingest ref, at the last update
	done   int64                     // bytes of ingests that finished
}

// update takes the ingests in progress now and returns the bytes
// downloaded in total: an ingest that disappeared since the last update is
// counted with its total size (it was committed), or its last offset when
// the size was unknown.
func (t *downloadTracker) update(now []content.Status) int64 {
	seen := make(map[string]content.Status, len(now))
	var sum int64
	for _, s := range now {
		seen[s.Ref] = s
		sum += s.Offset
	}
	for ref, old := range t.active {
		if _, ok := seen[ref]; ok {
			continue
		}
		if old.Total > 0 {
			t.done += old.Total
		} else {
			t.done += old.Offset
		}
	}
	t.active = seen
	return t.done + sum
}
