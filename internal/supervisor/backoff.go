package supervisor

import "time"

// Policy is a restart back-off: the first restart after a crash waits
// Initial, each further one without a stable run in between twice as
// long, up to Max. A process that ran for ResetAfter counts as stable: its
// next crash starts over.
type Policy struct {
	Initial, Max, ResetAfter time.Duration
}

// Backoff is an exponential back-off that forgets after a stable run. Not
// safe for concurrent use; the zero value is not usable (see NewBackoff).
type Backoff struct {
	p   Policy
	cur time.Duration // the last delay; 0: none yet
}

// NewBackoff returns a Backoff following p.
func NewBackoff(p Policy) *Backoff { return &Backoff{p: p} }

// Next returns the delay before the next attempt, given how long the last
// attempt lasted (0 for one that failed at once): Initial after a run of
// at least ResetAfter (or at first), else twice the last delay, capped at
// Max.
func (b *Backoff) Next(ran time.Duration) time.Duration {
	if b.cur == 0 || ran >= b.p.ResetAfter {
		b.cur = b.p.Initial
	} else {
		b.cur = min(2*b.cur, b.p.Max)
	}
	return b.cur
}
