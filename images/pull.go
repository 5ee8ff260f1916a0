package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distribution/reference"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/runtime"
)

// PullerConfig bounds a Puller's pulls, as the kubelet's
// serializeImagePulls and maxParallelImagePulls do.
type PullerConfig struct {
	// SerializePulls: one pull at a time (the kubelet's default, true).
	SerializePulls bool
	// MaxParallelPulls bounds the pulls at once when SerializePulls is
	// false (0: no bound). With SerializePulls only 0 or 1 is valid, as in
	// the kubelet.
	MaxParallelPulls int
}

// Validate refuses what the kubelet refuses: a negative bound, and a bound
// above 1 with serialized pulls.
func (c PullerConfig) Validate() error {
	if c.MaxParallelPulls < 0 {
		return fmt.Errorf("invalid configuration: --max-parallel-image-pulls %d must not be negative (0: no limit)", c.MaxParallelPulls)
	}
	if c.SerializePulls && c.MaxParallelPulls > 1 {
		return errors.New("invalid configuration: --max-parallel-image-pulls cannot be larger than 1 unless --serialize-image-pulls is set to false")
	}
	return nil
}

// PullResult is one Pull's outcome.
type PullResult struct {
	// ImageID is the runtime's image ID (CRI's image ref).
	ImageID string
	// Size is the image's size in bytes, as the runtime reports it after
	// the pull (0 if it could not say: best effort, as the kubelet).
	Size uint64
	// Took is the time of the pull itself, size lookup included (the
	// kubelet's pullDuration). For a caller that joined a pull already
	// under way it is only the part that caller waited for.
	Took time.Duration
	// Waited is the caller's whole time in Pull: waiting for a pull slot,
	// or for another caller's pull of the same image, included.
	Waited time.Duration
}

// Puller pulls images through a runtime, with the kubelet's limits on
// parallel pulls, and never pulls one image twice at the same time:
// concurrent Pulls of the same image with the same credentials share one
// runtime pull. Create with NewPuller. Safe for concurrent use.
type Puller struct {
	rt    runtime.Images
	clock clock.PassiveClock
	// slots holds a token per running pull; nil: no bound.
	slots chan struct{}
	wg    sync.WaitGroup

	mu sync.Mutex
	// inflight: the pulls queued or running, by pullKey.
	inflight map[string]*sharedPull
}

// sharedPull is one runtime pull and the callers waiting for it.
type sharedPull struct {
	done chan struct{}
	// cancel stops the pull; called when its last caller gave up.
	cancel context.CancelFunc
	// waiters counts the callers still waiting (under Puller.mu).
	waiters int
	// res and err are set before done closes.
	res PullResult
	err error
}

// NewPuller returns a Puller on rt with clk's time (nil: the real clock).
func NewPuller(rt runtime.Images, clk clock.PassiveClock, cfg PullerConfig) (*Puller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	p := &Puller{rt: rt, clock: clk, inflight: map[string]*sharedPull{}}
	switch {
	case cfg.SerializePulls:
		p.slots = make(chan struct{}, 1)
	case cfg.MaxParallelPulls > 0:
		p.slots = make(chan struct{}, cfg.MaxParallelPulls)
	}
	return p, nil
}

// Normalize returns ref fully qualified, as containerd names images: the
// Docker Hub registry and the library/ namespace where ref names no
// registry, and the latest tag where it has neither tag nor digest
// (checklist E.2): "nginx" -> "docker.io/library/nginx:latest". A
// reference that does not parse gets the kubelet's error wording
// (pkg/util/parsers.ParseImageName). Pure.
func Normalize(ref string) (string, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", fmt.Errorf("couldn't parse image name %q: %w", ref, err)
	}
	return reference.TagNameOnly(named).String(), nil
}

// Pull makes ref present and returns its image ID. auths are tried in
// order until one succeeds (checklist E.16); with none the pull is
// anonymous. It blocks while other pulls hold the slots, and joins a pull
// of the same image with the same auths that is already queued or
// running. ctx bounds the caller's wait: when the last caller waiting for
// a pull gives up, the pull is cancelled. The returned error aggregates
// the runtime's errors of every credential tried.
func (p *Puller) Pull(ctx context.Context, ref string, auths []runtime.AuthConfig) (PullResult, error) {
	start := p.clock.Now()
	key, err := pullKey(ref, auths)
	if err != nil {
		return PullResult{}, err
	}
	sp := p.join(ctx, key, ref, auths)
	select {
	case <-sp.done:
		res := sp.res
		res.Waited = p.clock.Since(start)
		res.Took = min(res.Took, res.Waited)
		return res, sp.err
	case <-ctx.Done():
		p.leave(key, sp)
		return PullResult{}, ctx.Err()
	}
}

// Wait blocks until no pull runs; callers must have stopped calling Pull
// (their contexts ended, so their pulls are cancelled).
func (p *Puller) Wait() { p.wg.Wait() }

// join returns the pull of key, starting it if none is under way, with one
// more waiter.
func (p *Puller) join(ctx context.Context, key, ref string, auths []runtime.AuthConfig) *sharedPull {
	p.mu.Lock()
	defer p.mu.Unlock()
	sp, ok := p.inflight[key]
	if !ok {
		// The pull outlives its first caller if others joined it, so it
		// runs on a context of its own, cancelled when all callers left.
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		sp = &sharedPull{done: make(chan struct{}), cancel: cancel}
		p.inflight[key] = sp
		p.wg.Add(1)
		go p.run(pctx, key, sp, ref, auths)
	}
	sp.waiters++
	return sp
}

// leave drops a waiter of sp; the last one cancels the pull, and a later
// Pull of the same image starts a new one.
func (p *Puller) leave(key string, sp *sharedPull) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sp.waiters--
	if sp.waiters > 0 {
		return
	}
	sp.cancel()
	if p.inflight[key] == sp {
		delete(p.inflight, key)
	}
}

// run performs sp and publishes its result.
func (p *Puller) run(ctx context.Context, key string, sp *sharedPull, ref string, auths []runtime.AuthConfig) {
	defer p.wg.Done()
	defer sp.cancel()
	res, err := p.pull(ctx, ref, auths)
	p.mu.Lock()
	if p.inflight[key] == sp {
		delete(p.inflight, key)
	}
	sp.res, sp.err = res, err
	p.mu.Unlock()
	close(sp.done)
}

// pull takes a slot, pulls ref and reads its size.
func (p *Puller) pull(ctx context.Context, ref string, auths []runtime.AuthConfig) (PullResult, error) {
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return PullResult{}, ctx.Err()
		}
		defer func() { <-p.slots }()
	}
	start := p.clock.Now()
	id, err := p.pullWithAuths(ctx, ref, auths)
	if err != nil {
		return PullResult{}, err
	}
	var size uint64
	if img, err := p.rt.ImageStatus(ctx, ref); err == nil {
		size = img.Size
	}
	return PullResult{ImageID: id, Size: size, Took: p.clock.Since(start)}, nil
}

// pullWithAuths is the kubelet's kuberuntime PullImage: anonymous without
// credentials, else each credential in order until one works; the errors
// of all of them otherwise.
func (p *Puller) pullWithAuths(ctx context.Context, ref string, auths []runtime.AuthConfig) (string, error) {
	if len(auths) == 0 {
		return p.rt.PullImage(ctx, ref, nil)
	}
	var errs []error
	for i := range auths {
		id, err := p.rt.PullImage(ctx, ref, &auths[i])
		if err == nil {
			return id, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", utilerrors.NewAggregate(errs)
}

// pullKey identifies pulls that may share one runtime pull: the same image
// (however it is spelled) with the same credentials.
func pullKey(ref string, auths []runtime.AuthConfig) (string, error) {
	name, err := Normalize(ref)
	if err != nil {
		return "", err
	}
	if len(auths) == 0 {
		return name, nil
	}
	b, err := json.Marshal(auths)
	if err != nil {
		return "", fmt.Errorf("credentials of %s: %w", ref, err)
	}
	sum := sha256.Sum256(b)
	return name + " " + hex.EncodeToString(sum[:]), nil
}
