package containerd

import (
	"testing"

	"github.com/containerd/containerd/v2/core/content"
)

func TestDownloadTracker(t *testing.T) {
	var tr downloadTracker
	steps := []struct {
		name string
		now  []content.Status
		want int64
	}{
		{"nothing yet", nil, 0},
		{"two layers start", []content.Status{{Ref: "layer-a", Offset: 100, Total: 1000}, {Ref: "layer-b", Offset: 10, Total: 50}}, 110},
		{"a grows, b committed", []content.Status{{Ref: "layer-a", Offset: 600, Total: 1000}}, 650},
		{"a committed, c of unknown size", []content.Status{{Ref: "layer-c", Offset: 5}}, 1055},
		{"c gone: its last offset counts", nil, 1055},
	}
	for _, s := range steps {
		if got := tr.update(s.now); got != s.want {
			t.Errorf("%s: %d bytes, want %d", s.name, got, s.want)
		}
	}
}
