package logdiag

import (
	"bytes"
	"strings"
	"testing"
)

func TestStripPrefixes(t *testing.T) {
	tests := []struct{ in, msg, level, proc string }{
		{"(EngineCore_DP0 pid=123) ERROR 05-29 10:00:00 [core.py:708] ValueError: x", "ValueError: x", "ERROR", "EngineCore_DP0 pid=123"},
		{"(VllmWorker rank=0 pid=9) INFO 05-29 10:00:00 [gpu_worker.py:1] hello", "hello", "INFO", "VllmWorker rank=0 pid=9"},
		{"(APIServer pid=1) Traceback (most recent call last):", "Traceback (most recent call last):", "", "APIServer pid=1"},
		{"(APIServer pid=1)   File \"x.py\", line 1, in f", "  File \"x.py\", line 1, in f", "", "APIServer pid=1"},
		{"(EngineCore_DP0 pid=1) ERROR 05-29 10:00:00 [core.py:708]   File \"x.py\", line 1, in f", "  File \"x.py\", line 1, in f", "ERROR", "EngineCore_DP0 pid=1"},
		{"(RayWorkerWrapper pid=14, ip=10.0.0.2) INFO 03-27 10:29:01 [worker.py:267] Memory profiling takes 4.26 seconds [repeated 30x across cluster]", "Memory profiling takes 4.26 seconds", "INFO", "RayWorkerWrapper pid=14, ip=10.0.0.2"},
		{"INFO 08-19 07:51:03 model_runner.py:732] Loading model weights took 2.3463 GB", "Loading model weights took 2.3463 GB", "INFO", ""},
		{"[rank0]: torch.OutOfMemoryError: x", "torch.OutOfMemoryError: x", "", "rank0"},
		{"[2025-12-11 10:00:00 TP0] Load weight begin. avail mem=1 GB", "Load weight begin. avail mem=1 GB", "", "TP0"},
		{"[2025-12-11 10:00:00 DP1 TP3] x", "x", "", "DP1 TP3"},
		{"[2025-12-11 10:00:00] The server is fired up and ready to roll!", "The server is fired up and ready to roll!", "", ""},
		{"[2025-12-11 10:00:30] ERROR:    [Errno 98] error", "[Errno 98] error", "ERROR", ""},
		{"[TP0] Load weight end.", "Load weight end.", "", "TP0"},
		{"vllm-1  | (APIServer pid=1) INFO 05-29 10:00:00 [api_server.py:1] vLLM API server version 0.16.0", "vLLM API server version 0.16.0", "INFO", "APIServer pid=1"},
		{"server_1  | INFO:     Started server process [1]", "Started server process [1]", "INFO", ""},
		{"vllm-1  | 2025-10-01T12:00:00.123456789Z (EngineCore_DP0 pid=7) hello", "hello", "", "EngineCore_DP0 pid=7"},
		{"[2026-08-21T19:42:40Z] (EngineCore pid=522) ERROR 08-21 19:42:40 [core.py:1354] boom", "boom", "ERROR", "EngineCore pid=522"},
		{"Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:01<00:00]", "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:01<00:00]", "", ""},
		{"(this is not a prefix) x", "(this is not a prefix) x", "", ""},
		{"usage: vllm serve [model_tag] [options]", "usage: vllm serve [model_tag] [options]", "", ""},
	}
	for _, tt := range tests {
		msg, level, proc := stripPrefixes(tt.in)
		if msg != tt.msg || level != tt.level || proc != tt.proc {
			t.Errorf("stripPrefixes(%q) = %q, %q, %q; want %q, %q, %q", tt.in, msg, level, proc, tt.msg, tt.level, tt.proc)
		}
	}
}

func TestStripANSI(t *testing.T) {
	in := "\x1b[1;36m(APIServer pid=1)\x1b[0;0m \x1b[32mINFO\x1b[0m x\x1b"
	if got := stripANSI(in); got != "(APIServer pid=1) INFO x" {
		t.Errorf("stripANSI = %q", got)
	}
}

func TestTailLimits(t *testing.T) {
	// TailLines lines at most, even when they are short.
	var b strings.Builder
	for i := 0; i < TailLines+10; i++ {
		b.WriteString("x\n")
	}
	tl, first := tail([]byte(b.String()))
	if n := bytes.Count(tl, []byte{'\n'}); n != TailLines || first != 11 {
		t.Errorf("tail: %d lines from line %d, want %d from 11", n, first, TailLines)
	}
	tl, first = tail([]byte("a\nb"))
	if string(tl) != "a\nb" || first != 1 {
		t.Errorf("tail of a short log = %q from %d", tl, first)
	}
}
