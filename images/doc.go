// Package images pulls images for the agent and garbage-collects the ones
// no container uses.
//
// Pulling (pull*.go): pulls are serialized, or bounded by a maximum, as the
// kubelet's --serialize-image-pulls and --max-parallel-image-pulls; one
// image is never pulled twice at the same time; the credentials that match
// an image are tried in order (checklist E.16).
//
// Garbage collection (gc*.go): the kubelet's image GC policy (checklist
// F.2-F.4): when the image filesystem is fuller than the high threshold,
// unused images are removed, least recently used first, down to the low
// threshold. Record is what that policy and `skiff images ls` know of an
// image's use.
package images

import "time"

// Record is what the agent knows of one image's use, keyed by image ID.
type Record struct {
	// FirstDetected is when the agent first saw the image.
	FirstDetected time.Time
	// LastUsed is the last time a container was seen using the image
	// (zero: never).
	LastUsed time.Time
}
