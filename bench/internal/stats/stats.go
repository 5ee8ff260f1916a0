// Package stats summarises benchmark samples: percentiles by the
// nearest-rank method and a min/median/p90/max summary. Pure functions, safe
// for concurrent use.
package stats

import (
	"math"
	"slices"
	"time"
)

// Summary describes a sample of durations in seconds.
type Summary struct {
	N      int     `json:"n"`
	Min    float64 `json:"min_s"`
	Median float64 `json:"median_s"`
	P90    float64 `json:"p90_s"`
	Max    float64 `json:"max_s"`
	Mean   float64 `json:"mean_s"`
}

// Percentile returns the p-th percentile (0 < p <= 100) of xs by the
// nearest-rank method: the smallest sample such that at least p % of the
// samples are less than or equal to it. xs need not be sorted and is not
// modified. An empty sample or p outside (0, 100] gives NaN.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 || p <= 0 || p > 100 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

// Median is the 50th percentile by nearest rank, except that an even-sized
// sample gives the mean of the two middle values.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Summarize returns the summary of xs; an empty sample gives N 0 and NaNs.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		nan := math.NaN()
		return Summary{Min: nan, Median: nan, P90: nan, Max: nan, Mean: nan}
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return Summary{
		N:      len(xs),
		Min:    slices.Min(xs),
		Median: Median(xs),
		P90:    Percentile(xs, 90),
		Max:    slices.Max(xs),
		Mean:   sum / float64(len(xs)),
	}
}

// Seconds converts durations to float seconds.
func Seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// Ratio returns a/b, or NaN when b is not positive or either is NaN.
func Ratio(a, b float64) float64 {
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}
