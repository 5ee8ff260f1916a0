package startgate

import (
	"time"
)

// startSample is one finished start (or teardown step) as a Gate saw
// it: the input of a limitController.
type startSample struct {
	// End is when the start gave its slot back.
	End time.Time
	// Queued: other starts waited for a slot when this one finished, so the
	// limit, not the demand, bounded the starts in flight.
	Queued bool
}

// Tuning of the limitController.
const (
	// limitGainShare is the share of the proportional throughput change a
	// step must show to count: raising the limit from L to L' is kept only
	// if throughput rises by more than limitGainShare*(L'/L-1); lowering it
	// is kept only if throughput falls by less than that share. Between
	// the two (the knee of the curve) the limit stays.
	limitGainShare = 0.5
	// slowStartGainShare is limitGainShare for slow start's doublings:
	// their signal is large and a wrong doubling costs one window.
	slowStartGainShare = 0.25
	// limitMinWindow is the least number of samples one measurement takes;
	// a window also takes at least as many samples as the limit.
	limitMinWindow = 16
	// limitMaxHold is the most windows the limit stays at its base between
	// probes that keep failing.
	limitMaxHold = 4
)

// limitPhase names what the current measurement window measures.
type limitPhase int

const (
	// phaseSlowStart doubles the limit while throughput keeps up.
	phaseSlowStart limitPhase = iota
	// phaseBase re-measures the throughput at the base limit.
	phaseBase
	// phaseUp measures base+step.
	phaseUp
	// phaseDown measures base-step.
	phaseDown
)

// limitController chooses how many starts may be in flight: a hill climb
// on measured throughput. Throughput is completions per second over a
// window of at least max(limitMinWindow, limit) completions, counted only
// while the limit bounded the starts (every sample Queued) and only after
// as many completions as the limit passed since the limit changed (those
// ran mostly under the old one). Rising CRI latency at a flat throughput
// (Little's law: more in flight, same rate) shows as a step up that did
// not pay, so the limit goes back down. It starts at min and doubles while each
// doubling raises throughput (slow start), then probes around the base
// limit one step (a quarter of it) up, then down, then re-measures the
// base (for longer after each round that found nothing better, see
// backOff), keeping a step up only when throughput rose enough and a step down
// whenever throughput barely fell (limitGainShare): where starts compute
// (CPU-bound) it settles near the knee, where they wait (CNI, mounts) it
// climbs while throughput follows. The limit never leaves [min, max].
//
// A limitController is pure (no clock, no goroutine: time comes from the
// samples) and not safe for concurrent use; its Gate serializes it.
type limitController struct {
	min, max int
	limit    int
	phase    limitPhase
	// base is the limit the steady phases probe around and baseX its last
	// measured throughput (starts/s); in slow start, the last kept limit
	// (0: none yet).
	base  int
	baseX float64
	// hold is the number of windows still to measure at base before the
	// next probe; holdNext the hold after the next failed probe.
	hold, holdNext int
	// warmup counts the completions still to skip after a limit change:
	// they show the old limit more than the new one.
	warmup int
	// The current window began at winStart (a completion) and has n
	// completions since, each with others waiting.
	winStart time.Time
	n        int
	// lastQueued: the previous sample found starts waiting.
	lastQueued bool
}

// newLimitController returns a controller whose limit starts at lo and
// stays in [lo, hi]; lo < 1 counts as 1, hi < lo as lo.
func newLimitController(lo, hi int) *limitController {
	lo = max(lo, 1)
	hi = max(hi, lo)
	return &limitController{min: lo, max: hi, limit: lo}
}

// Limit is the current limit.
func (c *limitController) Limit() int { return c.limit }

// Observe takes one finished start and returns the (possibly new) limit.
// A completion counts only if it and the one before found starts waiting,
// so that the limit bounded the starts all the time between them; any
// other restarts the window: idle time between bursts, or demand below the
// limit, must not count as low throughput.
func (c *limitController) Observe(s startSample) int {
	saturated := s.Queued && c.lastQueued
	c.lastQueued = s.Queued
	if c.warmup > 0 {
		c.warmup--
		c.restartWindow(s.End)
		return c.limit
	}
	if !saturated || c.winStart.IsZero() {
		c.restartWindow(s.End)
		return c.limit
	}
	c.n++
	elapsed := s.End.Sub(c.winStart).Seconds()
	if c.n < max(limitMinWindow, c.limit) || elapsed <= 0 {
		return c.limit
	}
	c.decide(float64(c.n)/elapsed, s.End)
	return c.limit
}

// restartWindow drops the current window's completions; the next window
// begins at now.
func (c *limitController) restartWindow(now time.Time) {
	c.winStart = now
	c.n = 0
}

// limitStep is the size of a probe around base.
func limitStep(base int) int { return max(1, base/4) }

// gained reports whether throughput x at limit l is enough of a gain over
// throughput bx at the lower limit bl (limitGainShare).
func gained(x float64, l int, bx float64, bl int) bool {
	return x > bx*(1+limitGainShare*(float64(l)/float64(bl)-1))
}

// kept reports whether throughput x at limit l is close enough to
// throughput bx at the higher limit bl to prefer l (limitGainShare).
func kept(x float64, l int, bx float64, bl int) bool {
	return x >= bx*(1-limitGainShare*(1-float64(l)/float64(bl)))
}

// decide acts on the throughput x measured at the current limit.
func (c *limitController) decide(x float64, now time.Time) {
	switch c.phase {
	case phaseSlowStart:
		if c.base == 0 || x > c.baseX*(1+slowStartGainShare*(float64(c.limit)/float64(c.base)-1)) {
			c.base, c.baseX = c.limit, x
			if c.limit < c.max {
				c.setLimit(min(2*c.limit, c.max), now)
				return
			}
			c.probeDown(now)
			return
		}
		c.probeUp(now) // the doubling was too much: probe smaller steps
	case phaseBase:
		c.baseX = x
		if c.hold > 0 {
			c.hold--
			c.setLimit(c.base, now)
			return
		}
		c.probeUp(now)
	case phaseUp:
		if gained(x, c.limit, c.baseX, c.base) {
			c.holdNext = 0
			c.remeasure(now)
			return
		}
		c.probeDown(now)
	case phaseDown:
		if kept(x, c.limit, c.baseX, c.base) {
			c.holdNext = 0
			c.remeasure(now)
			return
		}
		c.backOff()
		c.phase = phaseBase
		c.setLimit(c.base, now)
	}
}

// backOff is called when probes found nothing better than base: the next
// probe waits hold more windows at base, doubling up to limitMaxHold while
// probes keep failing (each costs throughput where the base is right).
func (c *limitController) backOff() {
	c.hold = c.holdNext
	c.holdNext = min(max(1, 2*c.holdNext), limitMaxHold)
}

// remeasure makes the current limit the base and measures it again before
// the next probe: the window that won a probe overestimates (it won partly
// by noise), and comparing the next probe with it would drift the limit.
func (c *limitController) remeasure(now time.Time) {
	c.base = c.limit
	c.phase = phaseBase
	c.setLimit(c.limit, now)
}

// probeUp measures base+step next, or probes down at the maximum.
func (c *limitController) probeUp(now time.Time) {
	if c.base >= c.max {
		c.probeDown(now)
		return
	}
	c.phase = phaseUp
	c.setLimit(min(c.base+limitStep(c.base), c.max), now)
}

// probeDown measures base-step next, or re-measures base at the minimum.
func (c *limitController) probeDown(now time.Time) {
	if c.base <= c.min {
		c.backOff()
		c.phase = phaseBase
		c.setLimit(c.base, now)
		return
	}
	c.phase = phaseDown
	c.setLimit(max(c.base-limitStep(c.base), c.min), now)
}

// setLimit sets the limit and starts a new window at now; after a change
// the window skips as many completions as the new limit first (warm-up).
func (c *limitController) setLimit(l int, now time.Time) {
	if l != c.limit {
		c.warmup = l
	}
	c.limit = l
	c.restartWindow(now)
}
