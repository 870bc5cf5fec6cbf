package gate

import (
	"math"
	"slices"
)

// Stats summarise one latency metric in milliseconds, as vllm bench serve
// does: mean, median, population standard deviation and percentiles by
// linear interpolation (numpy's default).
type Stats struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Std    float64 `json:"std"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	N      int     `json:"n"`
}

// summarize computes Stats over xs (sorted in place). An empty set gives
// zeros, like vLLM's np.mean(x or 0).
func summarize(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	slices.Sort(xs)
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return Stats{
		Mean: mean, Std: math.Sqrt(ss / float64(len(xs))), N: len(xs),
		Median: percentile(xs, 50), P90: percentile(xs, 90), P99: percentile(xs, 99),
	}
}

// percentile is numpy.percentile's default ("linear") method over sorted
// xs: rank h = (n-1)·p/100, interpolated between its neighbours.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}
