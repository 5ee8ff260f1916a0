// Package service is the node's image service: the server.Images port of
// the local API (`skiff images ls`, `pull`, `rm`) over the runtime, with the
// agent's puller, credentials and image GC records.
package service

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/server"
)

// pullFunc pulls ref, trying auths in order (checklist E.16), under the
// agent's pull serialization. images.Puller.Pull, adapted to
// server.PullResult, is the one the agent wires; directPull is the
// fallback without it.
type pullFunc func(ctx context.Context, ref string, auths []runtime.AuthConfig) (server.PullResult, error)

// Service implements server.Images for `skiff images` over the agent's
// API: the runtime's images with the agent's use records, pulls with the
// node's credentials through the agent's puller, removals that refuse
// images in use. Safe for concurrent use.
type Service struct {
	rt runtime.Runtime
	// pull pulls an image (required).
	pull pullFunc
	// creds gives the node's credentials for an image; nil: anonymous.
	creds agent.PullCredentials
	// records returns the image GC's use records by image ID; nil: use is
	// not tracked (LastUsed stays empty).
	records func() map[string]images.Record
	// progress makes a counter of downloaded bytes; nil: unknown.
	progress func() func(context.Context) (int64, error)
	// keep are the references (ID, tag, digest) of images the node needs
	// whatever the containers say (the sandbox image: only sandboxes use
	// it, and an imported one is not pinned); shown pinned, never removed.
	keep map[string]bool
	// wake asks the pod workers to look again after a pull (a pod in
	// ImagePullBackOff starts at once); nil: none.
	wake func()
}

var _ server.Images = (*Service)(nil)

// Deps are the agent's own parts that `skiff images` shares;
// each may be nil (tests): pulls then go straight to the runtime
// anonymously and use is not tracked.
type Deps struct {
	// puller is the pods' puller, so that an API pull queues with theirs
	// and shares a pull of the same image.
	Puller *images.Puller
	// creds are the agent's credentials; the API pull is no pod's, so it
	// gets the node's only.
	Creds agent.PullCredentials
	// records are the image GC's use records.
	Records func() map[string]images.Record
	// keep are the images never removed (see Service.keep).
	Keep []string
	// wake is called after every successful pull (Agent.WakeAll).
	Wake func()
}

// New wires the agent's image API; importer (nil with an
// external runtime) counts downloaded bytes.
func New(rt runtime.Runtime, importer runtime.ImageImporter, deps Deps) *Service {
	a := &Service{rt: rt, pull: directPull(rt, clock.RealClock{}), creds: deps.Creds, records: deps.Records, wake: deps.Wake}
	a.keep = make(map[string]bool, len(deps.Keep))
	for _, ref := range deps.Keep {
		a.keep[ref] = true
	}
	if deps.Puller != nil {
		a.pull = pullerPull(deps.Puller)
	}
	if dc, ok := importer.(downloadCounter); ok {
		a.progress = dc.DownloadCounter
	}
	return a
}

// pullerPull adapts images.Puller to pullFunc. server.PullResult's Waited
// is the time queued before the pull began; images.PullResult's is the
// caller's whole time (pull included).
func pullerPull(p *images.Puller) pullFunc {
	return func(ctx context.Context, ref string, auths []runtime.AuthConfig) (server.PullResult, error) {
		r, err := p.Pull(ctx, ref, auths)
		if err != nil {
			return server.PullResult{}, err
		}
		return server.PullResult{ImageID: r.ImageID, Size: r.Size, Took: r.Took, Waited: max(0, r.Waited-r.Took)}, nil
	}
}

// downloadCounter is the managed containerd's count of downloaded bytes
// (containerd.Importer).
type downloadCounter interface {
	DownloadCounter() func(context.Context) (int64, error)
}

// List returns every image of the runtime with its last use (from the
// records) and whether a container uses it now.
func (a *Service) List(ctx context.Context) ([]server.Image, error) {
	imgs, err := a.rt.ListImages(ctx)
	if err != nil {
		return nil, err
	}
	inUse, err := a.imagesInUse(ctx)
	if err != nil {
		return nil, err
	}
	var recs map[string]images.Record
	if a.records != nil {
		recs = a.records()
	}
	out := make([]server.Image, 0, len(imgs))
	for _, img := range imgs {
		si := server.Image{
			ID: img.ID, RepoTags: img.RepoTags, RepoDigests: img.RepoDigests,
			Size: img.Size, Pinned: img.Pinned || images.RefersTo(a.keep, img), InUse: usedBy(inUse, img) != "",
		}
		if r, ok := recs[img.ID]; ok && !r.LastUsed.IsZero() {
			last := r.LastUsed
			si.LastUsed = &last
		}
		out = append(out, si)
	}
	return out, nil
}

// Pull pulls ref with the node's credentials for it (the credentials of no
// pod: node credentials only), then wakes the pod workers.
func (a *Service) Pull(ctx context.Context, ref string) (server.PullResult, error) {
	var auths []runtime.AuthConfig
	if a.creds != nil {
		auths, _, _ = a.creds.ForPod(&v1.Pod{}, ref)
	}
	res, err := a.pull(ctx, ref, auths)
	if err == nil && a.wake != nil {
		a.wake()
	}
	return res, err
}

// Remove removes the image ref names, with all its tags, unless the
// runtime pins it, the node keeps it (the sandbox image) or a container
// (running or not) uses it.
func (a *Service) Remove(ctx context.Context, ref string) error {
	img, err := a.rt.ImageStatus(ctx, ref)
	if err != nil {
		return err
	}
	if img.Pinned {
		return fmt.Errorf("image %s (%s) is pinned by the runtime: %w", ref, img.ID, server.ErrImageInUse)
	}
	if images.RefersTo(a.keep, img) {
		return fmt.Errorf("image %s (%s) is the sandbox (pause) image: %w", ref, img.ID, server.ErrImageInUse)
	}
	inUse, err := a.imagesInUse(ctx)
	if err != nil {
		return err
	}
	if c := usedBy(inUse, img); c != "" {
		return fmt.Errorf("image %s (%s) is used by container %s: %w", ref, img.ID, c, server.ErrImageInUse)
	}
	return a.rt.RemoveImage(ctx, img.ID)
}

// Progress implements server.Images.
func (a *Service) Progress(ctx context.Context) func() (int64, error) {
	if a.progress == nil {
		return nil
	}
	count := a.progress()
	return func() (int64, error) { return count(ctx) }
}

// imagesInUse maps the image names and IDs the runtime's containers use to
// a description of one such container.
func (a *Service) imagesInUse(ctx context.Context) (map[string]string, error) {
	cs, err := a.rt.ListContainers(ctx, runtime.ContainerFilter{})
	if err != nil {
		return nil, err
	}
	used := make(map[string]string, 2*len(cs))
	for _, c := range cs {
		desc := c.Name
		if pod := c.Labels["io.kubernetes.pod.name"]; pod != "" {
			desc = fmt.Sprintf("%s of pod %s/%s", c.Name, c.Labels["io.kubernetes.pod.namespace"], pod)
		}
		for _, key := range []string{c.ImageRef, c.Image} {
			if key != "" {
				used[key] = desc
			}
		}
	}
	return used, nil
}

// usedBy returns the container that uses img ("" if none).
func usedBy(used map[string]string, img *runtime.Image) string {
	for _, key := range append([]string{img.ID}, img.RepoDigests...) {
		if c := used[key]; c != "" {
			return c
		}
	}
	return ""
}

// directPull pulls through the runtime alone, trying auths in order (the
// first success wins; anonymous when there are none). It does not
// serialize pulls: it stands in for the agent's puller where there is none.
func directPull(rt runtime.Images, clk clock.PassiveClock) pullFunc {
	return func(ctx context.Context, ref string, auths []runtime.AuthConfig) (server.PullResult, error) {
		start := clk.Now()
		tries := make([]*runtime.AuthConfig, 0, len(auths)+1)
		for i := range auths {
			tries = append(tries, &auths[i])
		}
		if len(tries) == 0 {
			tries = append(tries, nil)
		}
		var errs []error
		for _, auth := range tries {
			id, err := rt.PullImage(ctx, ref, auth)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			res := server.PullResult{ImageID: id, Took: clk.Since(start)}
			if img, err := rt.ImageStatus(ctx, id); err == nil {
				res.Size = img.Size
			}
			return res, nil
		}
		return server.PullResult{}, errors.Join(errs...)
	}
}
