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

// CheckThresholds returns the thresholds of b that res misses; none means
// the gate passes. Zero thresholds are not checked, except
// max_failed_requests, whose zero default fails a run with any failed
// request. A run in which nothing completed always fails.
func CheckThresholds(res *BenchResult, b *config.Bench) []Violation {
	if res == nil {
		return []Violation{{Threshold: "bench", Message: "the benchmark did not run"}}
	}
	if b == nil {
		b = &config.Bench{}
	}
	var out []Violation
	add := func(attr, limit, got, msg string) {
		out = append(out, Violation{Threshold: attr, Limit: limit, Got: got, Message: msg})
	}
	if res.Completed == 0 {
		add("bench", "", "0", fmt.Sprintf("no request completed (%d failed)", res.Failed))
	}
	if res.Failed > b.MaxFailedRequests {
		add("max_failed_requests", fmt.Sprint(b.MaxFailedRequests), fmt.Sprint(res.Failed),
			fmt.Sprintf("%d requests failed; at most %d may (max_failed_requests)", res.Failed, b.MaxFailedRequests))
	}
	if v := b.MinOutputTokensPerSecond; v > 0 && res.OutputThroughput < v {
		add("min_output_tokens_per_second", fmt.Sprintf("%.2f", v), fmt.Sprintf("%.2f", res.OutputThroughput),
			fmt.Sprintf("output token throughput %.2f tok/s is below the minimum %.2f (min_output_tokens_per_second)", res.OutputThroughput, v))
	}
	if v := b.MinRequestsPerSecond; v > 0 && res.RequestThroughput < v {
		add("min_requests_per_second", fmt.Sprintf("%.2f", v), fmt.Sprintf("%.2f", res.RequestThroughput),
			fmt.Sprintf("request throughput %.2f req/s is below the minimum %.2f (min_requests_per_second)", res.RequestThroughput, v))
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
		if c.limit > 0 && c.got > ms(c.limit) {
			add(c.attr, c.limit.String(), fmt.Sprintf("%.2fms", c.got),
				fmt.Sprintf("%s %.2f ms is above the maximum %s (%s)", c.name, c.got, c.limit, c.attr))
		}
	}
	return out
}
