package gate

import (
	"fmt"
	"time"

	"github.com/roofline/roofline/internal/config"
)

// Violation is one threshold of a gate.bench block that a result misses.
type Violation struct {
	Threshold string `json:"threshold"` // the HCL attribute, e.g. "max_ttft_p99"
	Limit     string `json:"limit"`
	Got       string `json:"got"`
	Message   string `json:"message"`
}

// ThresholdCheck is one threshold of a gate.bench block and how a result
// fares against it.
type ThresholdCheck struct {
	Violation
	OK bool `json:"ok"`
}

// CheckThresholds returns the thresholds of b that res misses; none means
// the gate passes. Zero thresholds are not checked, except
// max_failed_requests, whose zero default fails a run with any failed
// request. A run in which nothing completed always fails.
func CheckThresholds(res *BenchResult, b *config.Bench) []Violation {
	var out []Violation
	for _, c := range EvaluateThresholds(res, b) {
		if !c.OK {
			out = append(out, c.Violation)
		}
	}
	return out
}

// EvaluateThresholds returns every threshold b sets, each with its verdict,
// for a report that shows the passes as well.
func EvaluateThresholds(res *BenchResult, b *config.Bench) []ThresholdCheck {
	if res == nil {
		return []ThresholdCheck{{Violation: Violation{Threshold: "bench", Message: "the benchmark did not run"}}}
	}
	if b == nil {
		b = &config.Bench{}
	}
	var out []ThresholdCheck
	add := func(ok bool, attr, limit, got, msg string) {
		out = append(out, ThresholdCheck{OK: ok, Violation: Violation{Threshold: attr, Limit: limit, Got: got, Message: msg}})
	}
	if res.Completed == 0 {
		add(false, "bench", "", "0", fmt.Sprintf("no request completed (%d failed)", res.Failed))
	}
	if res.Failed > b.MaxFailedRequests {
		add(false, "max_failed_requests", fmt.Sprint(b.MaxFailedRequests), fmt.Sprint(res.Failed),
			fmt.Sprintf("%d requests failed; at most %d may (max_failed_requests)", res.Failed, b.MaxFailedRequests))
	} else {
		add(true, "max_failed_requests", fmt.Sprint(b.MaxFailedRequests), fmt.Sprint(res.Failed),
			fmt.Sprintf("%d failed requests, at most %d allowed (max_failed_requests)", res.Failed, b.MaxFailedRequests))
	}
	for _, c := range []struct {
		attr, name, unit string
		limit, got       float64
	}{
		{"min_output_tokens_per_second", "output token throughput", "tok/s", b.MinOutputTokensPerSecond, res.OutputThroughput},
		{"min_requests_per_second", "request throughput", "req/s", b.MinRequestsPerSecond, res.RequestThroughput},
	} {
		if c.limit <= 0 {
			continue
		}
		if c.got < c.limit {
			add(false, c.attr, fmt.Sprintf("%.2f", c.limit), fmt.Sprintf("%.2f", c.got),
				fmt.Sprintf("%s %.2f %s is below the minimum %.2f (%s)", c.name, c.got, c.unit, c.limit, c.attr))
		} else {
			add(true, c.attr, fmt.Sprintf("%.2f", c.limit), fmt.Sprintf("%.2f", c.got),
				fmt.Sprintf("%s %.2f %s, at least %.2f wanted (%s)", c.name, c.got, c.unit, c.limit, c.attr))
		}
	}
	for _, c := range []struct {
		attr, name string
		limit      time.Duration
		got        float64
	}{
		{"max_ttft_p99", "P99 TTFT", b.MaxTTFTP99, res.TTFT.P99},
		{"max_tpot_p99", "P99 TPOT", b.MaxTPOTP99, res.TPOT.P99},
		{"max_itl_p99", "P99 ITL", b.MaxITLP99, res.ITL.P99},
	} {
		if c.limit <= 0 {
			continue
		}
		if c.got > ms(c.limit) {
			add(false, c.attr, c.limit.String(), fmt.Sprintf("%.2fms", c.got),
				fmt.Sprintf("%s %.2f ms is above the maximum %s (%s)", c.name, c.got, c.limit, c.attr))
		} else {
			add(true, c.attr, c.limit.String(), fmt.Sprintf("%.2fms", c.got),
				fmt.Sprintf("%s %.2f ms, at most %s allowed (%s)", c.name, c.got, c.limit, c.attr))
		}
	}
	return out
}
