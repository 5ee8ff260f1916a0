package startgate

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// simRuntime is a simulated CRI runtime for the limitController: starts
// share it like processes share CPUs (processor sharing) with capacity
// parallel, i.e. each of n starts in flight progresses at min(1,
// parallel/n) of full speed. parallel = cores models a CPU-bound runtime
// (latency grows linearly with concurrency beyond the cores, throughput is
// flat); a high parallel models a runtime whose starts wait (CNI, mounts):
// latency stays constant and throughput rises with concurrency.
type simRuntime struct {
	parallel float64
	// contention is the share of the capacity each start beyond parallel
	// costs (locks, context switches): capacity is
	// parallel/(1+contention*(n-parallel)) with n > parallel in flight.
	contention float64
	// work is the mean time one start takes alone; each start's work is
	// uniform in [work/2, 3*work/2], and one in twenty takes three times
	// longer (noise).
	work time.Duration
	// pods: the starts come as pods, a sandbox taking sandboxWork then its
	// container taking work, which waits for the sandbox and then goes
	// before new sandboxes (the Gate's priorities); the mix of the
	// two changes over a burst. false: every start takes work.
	pods        bool
	sandboxWork time.Duration
	seed        uint64
}

// simResult is what a simulated burst saw.
type simResult struct {
	// limits is the limit after each completion.
	limits []int
	// elapsed is the time until the last start finished.
	elapsed time.Duration
}

// simOp is a start in flight.
type simOp struct {
	start     time.Time
	remaining float64 // seconds of work at full speed
	sandbox   bool
}

// run starts total starts (total/2 pods if r.pods), all wanted at once, through a gate whose limit
// is ctl's (or fixed when ctl is nil) and returns what happened. The clock
// is simulated: nothing sleeps.
func (r simRuntime) run(total int, ctl *limitController, fixed int) simResult {
	rng := rand.New(rand.NewPCG(r.seed, r.seed^0x5eed))
	limit := func() int {
		if ctl == nil {
			return fixed
		}
		return ctl.Limit()
	}
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := epoch
	// pending starts; with pods, sandboxes pending and containers ready.
	pending, ready := total, 0
	if r.pods {
		pending = total / 2
	}
	var active []*simOp
	admit := func() {
		for len(active) < limit() && pending+ready > 0 {
			op := &simOp{start: now, sandbox: r.pods && ready == 0}
			w := r.work
			if op.sandbox {
				w = r.sandboxWork
			}
			op.remaining = w.Seconds() * (0.5 + rng.Float64())
			if rng.IntN(20) == 0 {
				op.remaining *= 3
			}
			active = append(active, op)
			if r.pods && ready > 0 {
				ready--
			} else {
				pending--
			}
		}
	}
	var res simResult
	admit()
	for len(active) > 0 {
		n := float64(len(active))
		capacity := r.parallel / (1 + r.contention*math.Max(0, n-r.parallel))
		rate := math.Min(1, capacity/n)
		next := math.Inf(1)
		for _, op := range active {
			next = math.Min(next, op.remaining/rate)
		}
		now = now.Add(time.Duration(next * float64(time.Second)))
		for _, op := range active {
			op.remaining -= rate * next
		}
		for i := 0; i < len(active); {
			op := active[i]
			if op.remaining > 1e-9 {
				i++
				continue
			}
			active = slices.Delete(active, i, i+1)
			if ctl != nil {
				ctl.Observe(startSample{End: now, Queued: pending+ready > 0})
			}
			if op.sandbox {
				ready++ // its container asks for a slot after the release
			}
			res.limits = append(res.limits, limit())
			admit()
		}
	}
	res.elapsed = now.Sub(epoch)
	return res
}

// meanLimit is the mean limit over the second half of the completions (the
// settled part).
func (s simResult) meanLimit() float64 {
	tail := s.limits[len(s.limits)/2:]
	sum := 0
	for _, l := range tail {
		sum += l
	}
	return float64(sum) / float64(len(tail))
}
