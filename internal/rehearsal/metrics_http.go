package rehearsal

import (
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The series that vLLM's /metrics carries besides its own: prometheus_client's
// default collectors (python_gc_*, python_info, process_*), written first,
// and prometheus-fastapi-instrumentator's http_* (vLLM PR 15657/15894, in
// 0.8.3 and later), written last. SGLang serves a multiprocess registry with
// neither.

// httpExcluded are the routes vLLM tells the instrumentator to skip.
var httpExcluded = map[string]bool{"/metrics": true, "/health": true, "/load": true,
	"/ping": true, "/version": true, "/server_info": true}

var (
	highrBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0,
		3.5, 4.0, 4.5, 5.0, 7.5, 10.0, 30.0, 60.0}
	lowrBuckets = []float64{0.1, 0.5, 1.0}
)

type httpKey struct{ handler, method, status string }

type httpSeries struct {
	mu        sync.Mutex
	requests  map[httpKey]int
	reqSize   map[string][2]float64 // handler -> count, sum
	respSize  map[string][2]float64
	durations map[[2]string]*histogram // handler, method
	highr     *histogram
}

func newHTTPSeries() *httpSeries {
	return &httpSeries{requests: map[httpKey]int{}, reqSize: map[string][2]float64{},
		respSize: map[string][2]float64{}, durations: map[[2]string]*histogram{}, highr: newHistogram(highrBuckets)}
}

// observe records one finished request. handler is the route template, ""
// for a path no route matches (the instrumentator groups those as "none").
func (s *httpSeries) observe(handler, method string, status int, reqBytes, respBytes int64, d time.Duration) {
	if httpExcluded[handler] {
		return
	}
	if handler == "" {
		handler = "none"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[httpKey{handler, method, strconv.Itoa(status/100) + "xx"}]++
	add := func(m map[string][2]float64, v int64) {
		c := m[handler]
		m[handler] = [2]float64{c[0] + 1, c[1] + float64(max(v, 0))}
	}
	add(s.reqSize, reqBytes)
	add(s.respSize, respBytes)
	k := [2]string{handler, method}
	if s.durations[k] == nil {
		s.durations[k] = newHistogram(lowrBuckets)
	}
	s.durations[k].observe(d.Seconds())
	s.highr.observe(d.Seconds())
}

func (s *httpSeries) render(b *strings.Builder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	head := func(name, typ, help string) {
		b.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
	}
	head("http_requests_total", "counter", "Total number of requests by method, status and handler.")
	for _, k := range sortedKeys(s.requests, func(k httpKey) string { return k.handler + "\x00" + k.method + "\x00" + k.status }) {
		sample(b, "http_requests_total", `handler="`+k.handler+`",method="`+k.method+`",status="`+k.status+`"`, float64(s.requests[k]))
	}
	summary := func(name, help string, m map[string][2]float64) {
		head(name, "summary", help)
		for _, h := range sortedKeys(m, func(h string) string { return h }) {
			sample(b, name+"_count", `handler="`+h+`"`, m[h][0])
			sample(b, name+"_sum", `handler="`+h+`"`, m[h][1])
		}
	}
	summary("http_request_size_bytes", "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ", s.reqSize)
	summary("http_response_size_bytes", "Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ", s.respSize)
	head("http_request_duration_highr_seconds", "histogram", "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. ")
	writeHist(b, "http_request_duration_highr_seconds", "", s.highr)
	head("http_request_duration_seconds", "histogram", "Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. ")
	for _, k := range sortedKeys(s.durations, func(k [2]string) string { return k[0] + "\x00" + k[1] }) {
		writeHist(b, "http_request_duration_seconds", `handler="`+k[0]+`",method="`+k[1]+`"`, s.durations[k])
	}
}

func sortedKeys[K comparable, V any](m map[K]V, str func(K) string) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ { // insertion sort: a handful of routes
		for j := i; j > 0 && str(keys[j]) < str(keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// writeHist writes a histogram's samples; labels may be empty.
func writeHist(b *strings.Builder, n, labels string, h *histogram) {
	sep := ""
	if labels != "" {
		sep = ","
	}
	var cum uint64
	for i, le := range h.buckets {
		cum += h.counts[i].Load()
		sampleRaw(b, n+"_bucket", labels+sep+`le="`+pyFloat(le)+`"`, float64(cum))
	}
	sampleRaw(b, n+"_bucket", labels+sep+`le="+Inf"`, float64(h.count.Load()))
	sampleRaw(b, n+"_count", labels, float64(h.count.Load()))
	sampleRaw(b, n+"_sum", labels, math.Float64frombits(h.sumBits.Load()))
}

// sampleRaw writes a sample whose label set may be empty (no braces then).
func sampleRaw(b *strings.Builder, name, labels string, v float64) {
	if labels == "" {
		b.WriteString(name + " " + pyFloat(v) + "\n")
		return
	}
	sample(b, name, labels, v)
}

// renderProcess writes prometheus_client's default collectors for this
// process, read from /proc where the system has it.
func renderProcess(b *strings.Builder, start float64) {
	g := func(name, typ, help string, v float64) {
		b.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
		sampleRaw(b, name, "", v)
	}
	b.WriteString("# HELP python_gc_objects_collected_total Objects collected during gc\n# TYPE python_gc_objects_collected_total counter\n")
	for _, gen := range []string{"0", "1", "2"} {
		sample(b, "python_gc_objects_collected_total", `generation="`+gen+`"`, 0)
	}
	b.WriteString("# HELP python_info Python platform information\n# TYPE python_info gauge\n")
	sample(b, "python_info", `implementation="CPython",major="3",minor="12",patchlevel="11",version="3.12.11"`, 1)
	vsize, rss, cpu, fds := procStats()
	g("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", vsize)
	g("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", rss)
	g("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", math.Round(start*100)/100)
	g("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpu)
	g("process_open_fds", "gauge", "Number of open file descriptors.", fds)
	g("process_max_fds", "gauge", "Maximum number of open file descriptors.", 1048576)
}

// procStats reads /proc/self: virtual and resident size, CPU seconds, open
// file descriptors (zeros where /proc is missing).
func procStats() (vsize, rss, cpu, fds float64) {
	if raw, err := os.ReadFile("/proc/self/stat"); err == nil {
		s := string(raw)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			f := strings.Fields(s[i+1:])
			// fields after the command: state is f[0]; utime f[11], stime f[12], vsize f[20], rss f[21]
			if len(f) > 21 {
				ut, _ := strconv.ParseFloat(f[11], 64)
				st, _ := strconv.ParseFloat(f[12], 64)
				cpu = (ut + st) / 100
				vsize, _ = strconv.ParseFloat(f[20], 64)
				pages, _ := strconv.ParseFloat(f[21], 64)
				rss = pages * float64(os.Getpagesize())
			}
		}
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		fds = float64(len(ents))
	}
	return vsize, rss, cpu, fds
}
