package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Collector exports a Report as Prometheus metrics. It reads the report at
// scrape time, so a scrape never waits on a tick.
type Collector struct {
	report func() *Report
	// agent is nil for roofline check (no agent series then).
	agent *Agent
}

var (
	lblServer = []string{"server"}

	descUp = prometheus.NewDesc("roofline_server_up",
		"1 when the server's process runs, it passed its gates and /health (and the last short generation) succeed.", lblServer, nil)
	descAlive = prometheus.NewDesc("roofline_server_process_alive",
		"1 when the recorded process (pid, start time, boot id) still runs.", lblServer, nil)
	descDrift = prometheus.NewDesc("roofline_server_drift",
		"1 when the server differs from what the state records (gone, failed, unhealthy).", lblServer, nil)
	descRestarts = prometheus.NewDesc("roofline_server_restarts_total",
		"Restarts by roofline agent that passed the health gate.", lblServer, nil)
	descFailedRestarts = prometheus.NewDesc("roofline_server_failed_restarts",
		"Failed restarts in a row (reset when the server has been healthy for reset_after).", lblServer, nil)
	descGaveUp = prometheus.NewDesc("roofline_server_gave_up",
		"1 when the agent stopped restarting the server after max_restarts failures.", lblServer, nil)
	descNext = prometheus.NewDesc("roofline_server_next_restart_timestamp_seconds",
		"When the agent restarts the server next (backoff), Unix time.", lblServer, nil)
	descFailure = prometheus.NewDesc("roofline_server_last_failure_info",
		"The log classifier's class of the server's last failure (value 1).", []string{"server", "class"}, nil)
	descKV = prometheus.NewDesc("roofline_server_kv_cache_tokens",
		"KV cache size in tokens: measured from the engine's start-up log, or predicted by plan.", []string{"server", "source"}, nil)
	descGate = prometheus.NewDesc("roofline_server_gate_passed",
		"1 when the server's last promotion gates passed.", lblServer, nil)
	descGateTime = prometheus.NewDesc("roofline_server_gate_timestamp_seconds",
		"When the last promotion gates ran, Unix time.", lblServer, nil)
	descBenchTput = prometheus.NewDesc("roofline_server_bench_output_tokens_per_second",
		"Output token throughput of the last gate benchmark.", lblServer, nil)
	descBenchTTFT = prometheus.NewDesc("roofline_server_bench_ttft_median_seconds",
		"Median time to first token of the last gate benchmark.", lblServer, nil)
	descBenchTPOT = prometheus.NewDesc("roofline_server_bench_tpot_median_seconds",
		"Median time per output token of the last gate benchmark.", lblServer, nil)
	descServers = prometheus.NewDesc("roofline_servers",
		"Servers in the state.", nil, nil)
	descDrifted = prometheus.NewDesc("roofline_servers_drifted",
		"Servers that differ from the state.", nil, nil)
	descObserved = prometheus.NewDesc("roofline_observation_timestamp_seconds",
		"When the servers were last observed, Unix time.", nil, nil)
	descTicks = prometheus.NewDesc("roofline_agent_ticks_total",
		"Observation rounds of the agent.", nil, nil)
)

// NewCollector exports what report returns.
func NewCollector(report func() *Report, a *Agent) *Collector {
	return &Collector{report: report, agent: a}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descAlive, descDrift, descRestarts, descFailedRestarts, descGaveUp, descNext,
		descFailure, descKV, descGate, descGateTime, descBenchTput, descBenchTTFT, descBenchTPOT, descServers, descDrifted, descObserved} {
		ch <- d
	}
	if c.agent != nil {
		ch <- descTicks
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.agent != nil {
		ch <- prometheus.MustNewConstMetric(descTicks, prometheus.CounterValue, float64(c.agent.Ticks()))
	}
	rep := c.report()
	if rep == nil {
		return
	}
	g := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	g(descServers, float64(len(rep.Servers)))
	g(descDrifted, float64(rep.Drift))
	g(descObserved, float64(rep.Time.UnixMilli())/1000)
	for _, r := range rep.Servers {
		n := r.Name
		g(descUp, b2f(r.Up), n)
		g(descAlive, b2f(r.Alive), n)
		g(descDrift, b2f(r.Drift != ""), n)
		ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(r.Restarts), n)
		g(descFailedRestarts, float64(r.Failures), n)
		g(descGaveUp, b2f(r.GaveUp), n)
		if !r.NextRestart.IsZero() {
			g(descNext, float64(r.NextRestart.Unix()), n)
		}
		if r.FailureClass != "" {
			g(descFailure, 1, n, r.FailureClass)
		}
		if r.KVTokensMeasured > 0 {
			g(descKV, float64(r.KVTokensMeasured), n, "measured")
		}
		if r.KVTokensPredicted > 0 {
			g(descKV, float64(r.KVTokensPredicted), n, "predicted")
		}
		if r.GatePassed != nil {
			g(descGate, b2f(*r.GatePassed), n)
			if !r.GateCheckedAt.IsZero() {
				g(descGateTime, float64(r.GateCheckedAt.Unix()), n)
			}
		}
		if b := r.Bench; b != nil {
			g(descBenchTput, b.OutputThroughput, n)
			g(descBenchTTFT, b.MedianTTFTMs/1000, n)
			g(descBenchTPOT, b.MedianTPOTMs/1000, n)
		}
	}
}

// Registry is a registry with the collector, plus the Go runtime's and the
// process's own metrics for the agent (its CPU and memory).
func Registry(c *Collector, withProcess bool) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if withProcess {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return reg
}

// WriteTextfile writes rep for node_exporter's textfile collector
// (atomically: a temporary file renamed into place).
func WriteTextfile(path string, rep *Report) error {
	return prometheus.WriteToTextfile(path, Registry(NewCollector(func() *Report { return rep }, nil), false))
}
