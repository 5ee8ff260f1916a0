package stats

import (
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ten := []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}
	tests := []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"p90 of 1..10 is 9", ten, 90, 9},
		{"p100 is the max", ten, 100, 10},
		{"p50 nearest rank", ten, 50, 5},
		{"tiny p is the min", ten, 0.1, 1},
		{"single sample", []float64{3.5}, 90, 3.5},
		{"p90 of 20 samples is the 18th", seq(20), 90, 18},
		{"p90 of 3 samples is the max", []float64{1, 2, 3}, 90, 3},
		{"empty is NaN", nil, 50, math.NaN()},
		{"p 0 is NaN", ten, 0, math.NaN()},
		{"p over 100 is NaN", ten, 101, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.xs, tt.p); !sameFloat(got, tt.want) {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.xs, tt.p, got, tt.want)
			}
		})
	}
}

func TestPercentileDoesNotSortInput(t *testing.T) {
	xs := []float64{3, 1, 2}
	Percentile(xs, 50)
	if xs[0] != 3 || xs[1] != 1 || xs[2] != 2 {
		t.Errorf("input modified: %v", xs)
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want Summary
	}{
		{"odd", []float64{0.5, 0.3, 0.9}, Summary{N: 3, Min: 0.3, Median: 0.5, P90: 0.9, Max: 0.9, Mean: 1.7 / 3}},
		{"even median averages the middle", []float64{4, 1, 3, 2}, Summary{N: 4, Min: 1, Median: 2.5, P90: 4, Max: 4, Mean: 2.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.xs)
			if got.N != tt.want.N || !sameFloat(got.Min, tt.want.Min) || !sameFloat(got.Median, tt.want.Median) ||
				!sameFloat(got.P90, tt.want.P90) || !sameFloat(got.Max, tt.want.Max) || !sameFloat(got.Mean, tt.want.Mean) {
				t.Errorf("Summarize(%v) = %+v, want %+v", tt.xs, got, tt.want)
			}
		})
	}
	if e := Summarize(nil); e.N != 0 || !math.IsNaN(e.Median) {
		t.Errorf("Summarize(nil) = %+v, want N 0 and NaN", e)
	}
}

func TestRatioAndSeconds(t *testing.T) {
	if got := Ratio(3, 2); got != 1.5 {
		t.Errorf("Ratio(3,2) = %v", got)
	}
	for _, c := range [][2]float64{{1, 0}, {1, -1}, {math.NaN(), 1}, {1, math.NaN()}} {
		if got := Ratio(c[0], c[1]); !math.IsNaN(got) {
			t.Errorf("Ratio(%v) = %v, want NaN", c, got)
		}
	}
	got := Seconds([]time.Duration{1500 * time.Millisecond, 0})
	if got[0] != 1.5 || got[1] != 0 {
		t.Errorf("Seconds = %v", got)
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(n - i)
	}
	return out
}

func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-9
}
