package logdiag_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata file name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(name, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n got: %s\nwant: %s", name, got, want)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestClassifyTestdata classifies every excerpt under testdata/<class>/ and
// checks the class, that the evidence lines really are those lines of the
// file, and the whole diagnosis against its golden JSON.
func TestClassifyTestdata(t *testing.T) {
	for _, c := range Classes() {
		files, _ := filepath.Glob(filepath.Join("testdata", c.ID, "*.log"))
		if len(files) < 3 {
			t.Errorf("class %s: %d excerpts in testdata/%s, want at least 3 (engines and formats)", c.ID, len(files), c.ID)
		}
		for _, f := range files {
			t.Run(strings.TrimPrefix(f, "testdata/"), func(t *testing.T) {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				d := Classify(b)
				if d.Class != c.ID {
					t.Errorf("class = %s, want %s\nsummary: %s\nevidence: %q", d.Class, c.ID, d.Summary, d.Evidence)
				}
				checkEvidence(t, b, d)
				if c.ID != Unknown && len(d.Evidence) == 0 {
					t.Error("no evidence for a classified failure")
				}
				if d.Summary == "" || d.Action == "" || d.Cause == "" || d.Title == "" {
					t.Errorf("empty text in %+v", d)
				}
				r, err := ClassifyReader(bytes.NewReader(b))
				if err != nil || !equalDiag(r, d) {
					t.Errorf("ClassifyReader = %+v, %v; Classify = %+v", r, err, d)
				}
				golden(t, strings.TrimSuffix(f, ".log")+".json", mustJSON(t, d))
			})
		}
	}
}

// checkEvidence verifies that each evidence line is the log's line of that
// number (colour codes removed, long lines cut).
func checkEvidence(t *testing.T, log []byte, d Diagnosis) {
	t.Helper()
	if len(d.Evidence) != len(d.EvidenceLines) {
		t.Fatalf("%d evidence lines but %d line numbers", len(d.Evidence), len(d.EvidenceLines))
	}
	all := strings.Split(string(log), "\n")
	for k, no := range d.EvidenceLines {
		if no < 1 || no > len(all) {
			t.Errorf("evidence line number %d outside 1..%d", no, len(all))
			continue
		}
		if k > 0 && no < d.EvidenceLines[k-1] {
			t.Errorf("evidence not in log order: %v", d.EvidenceLines)
		}
		text := strings.Trim(d.Evidence[k], "…")
		if !strings.Contains(stripANSI(all[no-1]), text) {
			t.Errorf("evidence %q is not line %d %q", d.Evidence[k], no, all[no-1])
		}
	}
}

func equalDiag(a, b Diagnosis) bool {
	return a.Class == b.Class && a.Summary == b.Summary && slices.Equal(a.Evidence, b.Evidence) &&
		slices.Equal(a.EvidenceLines, b.EvidenceLines)
}

func TestTestdataDirsAreClasses(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "footprint" && e.Name() != "real" && Info(e.Name()).ID != e.Name() && !strings.HasPrefix(e.Name(), "Fuzz") {
			t.Errorf("testdata/%s is not a class id: its excerpts are never tested", e.Name())
		}
	}
}

func TestClasses(t *testing.T) {
	want := []string{"oom_weights", "kv_too_small", "no_kv_memory", "free_mem_below_util", "port_in_use",
		"missing_files", "unsupported_arch", "driver_mismatch", "nccl_error", "bad_flag", "oom_cudagraph",
		"sglang_mem_fraction", "unknown"}
	var got []string
	for _, c := range Classes() {
		got = append(got, c.ID)
		if c.Title == "" || c.Cause == "" || c.Action == "" {
			t.Errorf("%s: empty title, cause or action", c.ID)
		}
		if c.ID != Unknown && !strings.Contains(c.Action, "`roofline ") {
			t.Errorf("%s: the action names no roofline command: %s", c.ID, c.Action)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("class ids = %v, want %v", got, want)
	}
	// Classes returns a copy: callers cannot change the table.
	Classes()[0].Example[0] = "changed"
	if Classes()[0].Example[0] == "changed" {
		t.Error("Classes shares its Example slices")
	}
	if Info("no_such_class").ID != Unknown {
		t.Error("Info of an unknown id is not unknown")
	}
}

// TestClassExamples: the excerpt each class offers the rehearsal engine is
// classified as that class, alone, behind a compose prefix, and after a
// healthy engine's first lines.
func TestClassExamples(t *testing.T) {
	noise := "(APIServer pid=4100) INFO 05-29 10:00:00 [api_server.py:1885] vLLM API server version 0.16.0\n" +
		"(APIServer pid=4100) INFO 05-29 10:00:00 [utils.py:328] non-default args: {'port': 8000}\n"
	for _, c := range Classes() {
		if c.ID == Unknown {
			if len(c.Example) != 0 {
				t.Error("unknown has an example")
			}
			continue
		}
		if len(c.Example) == 0 {
			t.Errorf("%s has no example", c.ID)
			continue
		}
		plain := strings.Join(c.Example, "\n") + "\n"
		var compose strings.Builder
		for _, l := range c.Example {
			compose.WriteString("server-1  | " + l + "\n")
		}
		for name, log := range map[string]string{"plain": plain, "compose": compose.String(), "after-noise": noise + plain} {
			if d := Classify([]byte(log)); d.Class != c.ID {
				t.Errorf("%s example (%s) classified as %s: %s", c.ID, name, d.Class, d.Summary)
			}
		}
	}
}

// TestRootCause: the root cause wins over what follows from it.
func TestRootCause(t *testing.T) {
	tests := []struct {
		name      string
		log       string
		class     string
		firstLine int // line number of the last evidence line (the root)
	}{
		{
			name: "oom then engine core failure",
			log: `(EngineCore_DP0 pid=7) INFO 05-29 10:00:01 [gpu_model_runner.py:2602] Starting to load model /models/m...
(EngineCore_DP0 pid=7) ERROR 05-29 10:00:02 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 23.68 GiB of which 0.50 GiB is free.
(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
`,
			class: OOMWeights, firstLine: 2,
		},
		{
			name:  "consequence alone is unknown",
			log:   "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n",
			class: Unknown, firstLine: 1,
		},
		{
			name: "nccl echo on rank 0 printed before the oom of rank 1",
			log: `(VllmWorker rank=1 pid=9) INFO 05-29 10:00:05 [gpu_model_runner.py:3480] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 10%
(VllmWorker rank=0 pid=8) ERROR 05-29 10:00:06 [multiproc_executor.py:585] RuntimeError: NCCL error: remote process exited or there was a network error
(VllmWorker rank=1 pid=9) ERROR 05-29 10:00:06 [multiproc_executor.py:585] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB.
`,
			class: OOMCUDAGraph, firstLine: 3,
		},
		{
			name: "chained exception: the first one is the cause",
			log: `Traceback (most recent call last):
OSError: /models/m does not appear to have a file named config.json. Checkout 'https://huggingface.co//models/m/tree/None' for available files.

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
ValueError: Model architectures ['LlamaForCausalLM'] failed to be inspected. Please check the logs for more details.
`,
			class: MissingFiles, firstLine: 2,
		},
		{
			name: "the last launch counts",
			log: `INFO 04-30 10:00:00 [api_server.py:1043] vLLM API server version 0.8.5
OSError: [Errno 98] Address already in use
INFO 04-30 10:05:00 [api_server.py:1043] vLLM API server version 0.8.5
ERROR 04-30 10:05:30 [core.py:396] ValueError: No available memory for the cache blocks. Try increasing ` + "`gpu_memory_utilization`" + ` when initializing the engine.
`,
			class: NoKVMemory, firstLine: 4,
		},
		{
			name: "a retried port at INFO level is not the cause",
			log: `INFO 04-30 10:00:00 [utils.py:100] Port 29500 is already in use, trying port 29501 (Address already in use)
ERROR 04-30 10:05:30 [core.py:396] ValueError: No available memory for the cache blocks.
`,
			class: NoKVMemory, firstLine: 2,
		},
		{
			name: "a compatibility warning loses to the real failure",
			log: `/opt/vllm/lib/python3.12/site-packages/torch/cuda/__init__.py:262: UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.
OSError: [Errno 98] Address already in use
`,
			class: PortInUse, firstLine: 2,
		},
		{
			name:  "a compatibility warning alone is a hint",
			log:   "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n",
			class: DriverMismatch, firstLine: 1,
		},
		{
			name: "the raise line quoting the message is not the evidence",
			log: `[rank0]: Traceback (most recent call last):
[rank0]:     raise ValueError("No available memory for the cache blocks. "
[rank0]: ValueError: No available memory for the cache blocks. Try increasing ` + "`gpu_memory_utilization`" + ` when initializing the engine.
`,
			class: NoKVMemory, firstLine: 3,
		},
		{
			name: "oom after the weights loaded, in the profile run, is not a weights oom",
			log: `INFO 04-30 10:00:40 [gpu_model_runner.py:1347] Model loading took 14.9889 GiB and 5.123 seconds
ERROR 04-30 10:00:55 [core.py:396] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB.
`,
			class: Unknown, firstLine: 2,
		},
		{
			name: "oom with load frames after another rank finished loading",
			log: `(VllmWorker rank=0 pid=8) INFO 05-29 10:00:40 [gpu_model_runner.py:2653] Model loading took 30.1 GiB memory and 40.0 seconds
(VllmWorker rank=1 pid=9) ERROR 05-29 10:00:41 [multiproc_executor.py:585] Traceback (most recent call last):
(VllmWorker rank=1 pid=9) ERROR 05-29 10:00:41 [multiproc_executor.py:585]   File "/v/vllm/v1/worker/gpu_worker.py", line 273, in load_model
(VllmWorker rank=0 pid=8) INFO 05-29 10:00:41 [gpu_worker.py:298] Available KV cache memory: 10.00 GiB
(VllmWorker rank=1 pid=9) ERROR 05-29 10:00:41 [multiproc_executor.py:585]   File "/v/vllm/model_executor/models/llama.py", line 445, in _dummy_run
(VllmWorker rank=1 pid=9) ERROR 05-29 10:00:41 [multiproc_executor.py:585] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.
`,
			class: OOMWeights, firstLine: 6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Classify([]byte(tt.log))
			if d.Class != tt.class {
				t.Fatalf("class = %s (%s), want %s; evidence %q", d.Class, d.Summary, tt.class, d.Evidence)
			}
			if len(d.EvidenceLines) == 0 || d.EvidenceLines[len(d.EvidenceLines)-1] != tt.firstLine {
				t.Errorf("evidence lines = %v, want the root at line %d", d.EvidenceLines, tt.firstLine)
			}
		})
	}
}

func TestSummaries(t *testing.T) {
	tests := []struct{ log, want string }{
		{"ValueError: Free memory on device cuda:0 (20.31/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
			"Only 20.31 of 79.19 GiB is free on cuda:0 at start; gpu_memory_utilization 0.9 asks for 71.27 GiB."},
		{"ValueError: To serve at least one request with the models's max seq len (221000), (10.12 GiB KV cache is needed, which is larger than the available KV cache memory (5.59 GiB). Based on the available memory, the estimated maximum model length is 122080. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			"The KV cache cannot hold one request of max_model_len 221000: it needs 10.12 GiB, 5.59 GiB is available; the engine estimates max_model_len 122080 fits."},
		{"ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
			"Port 8000 (0.0.0.0) is already in use."},
		{"KeyError: 'invalid tool call parser: qwen3 (chose from { hermes,mistral })'",
			"This engine version has no tool call parser qwen3."},
		{"OSError: /models/m does not appear to have a file named config.json. Checkout 'https://huggingface.co//models/m/tree/None' for available files.",
			"/models/m has no config.json."},
		{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 350.00 MiB. GPU 0 has a total capacity of 23.68 GiB of which 212.81 MiB is free.",
			"CUDA ran out of memory (GPU 0: 212.81 MiB free of 23.68 GiB, tried to allocate 350.00 MiB); the log does not show at which stage of the start, so roofline names no cause."},
	}
	for _, tt := range tests {
		if got := Classify([]byte(tt.log)).Summary; got != tt.want {
			t.Errorf("summary of %.60q\n got %q\nwant %q", tt.log, got, tt.want)
		}
	}
}

// TestTailLineNumbers: a log longer than the tail still reports line
// numbers of the whole file, and a cause beyond the tail is not seen.
func TestTailLineNumbers(t *testing.T) {
	var b strings.Builder
	b.WriteString("OSError: [Errno 98] Address already in use\n") // line 1: outside the tail
	for i := 0; i < 30000; i++ {
		fmt.Fprintf(&b, "(APIServer pid=1) INFO 05-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: %d.0 tokens/s, Running: 1 reqs\n", i)
	}
	b.WriteString("(EngineCore_DP0 pid=7) ERROR 05-29 10:00:00 [core.py:708] RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
	log := []byte(b.String())
	if len(log) <= TailBytes {
		t.Fatalf("test log is only %d bytes", len(log))
	}
	d := Classify(log)
	if d.Class != DriverMismatch || !slices.Equal(d.EvidenceLines, []int{30002}) {
		t.Errorf("got %s at %v, want driver_mismatch at line 30002", d.Class, d.EvidenceLines)
	}
	r, err := ClassifyReader(bytes.NewReader(log))
	if err != nil || !equalDiag(r, d) {
		t.Errorf("ClassifyReader = %+v, %v", r, err)
	}
	// Only the error line of line 1: the tail starts later, so it is unknown.
	short := []byte(strings.Replace(b.String(), "(EngineCore_DP0 pid=7) ERROR 05-29 10:00:00 [core.py:708] RuntimeError: CUDA error: no kernel image is available for execution on the device\n", "", 1))
	if d := Classify(short); d.Class != Unknown {
		t.Errorf("an error %d lines before the end was seen: %s", 30000, d.Class)
	}
}

// TestHugeLine: a many-megabyte line (a dumped config, a progress bar
// without newlines) neither panics nor ends up whole in the evidence.
func TestHugeLine(t *testing.T) {
	line := strings.Repeat("Capturing CUDA graphs 10%|█     | \r", 60000) + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. " + strings.Repeat("é", 1<<18)
	d := Classify([]byte("Model loading took 1.0 GiB\n" + line + "\n"))
	if d.Class != OOMCUDAGraph {
		t.Errorf("class = %s, want oom_cudagraph", d.Class)
	}
	for _, e := range d.Evidence {
		if len(e) > maxEvidence+10 || !utf8.ValidString(e) {
			t.Errorf("evidence of %d bytes, or invalid UTF-8", len(e))
		}
	}
}

func FuzzClassify(f *testing.F) {
	for _, c := range Classes() {
		f.Add([]byte(strings.Join(c.Example, "\n")))
	}
	files, _ := filepath.Glob("testdata/*/*.log")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("(\x1b[(pid=)\r\n[rank0]:\r[2025-01-01 00:00:00 TP0]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Classify(b)
		if Info(d.Class).ID != d.Class {
			t.Fatalf("class %q is not a class id", d.Class)
		}
		if len(d.Evidence) != len(d.EvidenceLines) || d.Summary == "" {
			t.Fatalf("inconsistent diagnosis %+v", d)
		}
		lines := bytes.Count(b, []byte{'\n'}) + 1
		for _, n := range d.EvidenceLines {
			if n < 1 || n > lines {
				t.Fatalf("evidence line %d outside 1..%d", n, lines)
			}
		}
		if _, err := json.Marshal(d); err != nil {
			t.Fatal(err)
		}
	})
}

// benchLog is a 2 MiB log of a TP2 start that ran for a while and then
// failed, in vLLM V1's multiprocess format.
func benchLog() []byte {
	var b bytes.Buffer
	b.WriteString("(APIServer pid=1) INFO 05-29 10:00:00 [api_server.py:1885] vLLM API server version 0.16.0\n")
	for i := 0; b.Len() < TailBytes-4096; i++ {
		fmt.Fprintf(&b, "(APIServer pid=1) INFO 05-29 10:%02d:%02d [loggers.py:123] Engine 000: Avg prompt throughput: %d.0 tokens/s, Avg generation throughput: 512.3 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%%, Prefix cache hit rate: 40.0%%\n", i/60%60, i%60, i)
		if i%50 == 0 {
			fmt.Fprintf(&b, "(VllmWorker rank=%d pid=9) WARNING 05-29 10:00:00 [custom_all_reduce.py:84] Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs.\n", i%2)
		}
	}
	ex, _ := os.ReadFile("testdata/oom_cudagraph/vllm-0.16-v1.log")
	b.Write(ex)
	return b.Bytes()
}

func BenchmarkClassify(b *testing.B) {
	log := benchLog()
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		if d := Classify(log); d.Class != OOMCUDAGraph {
			b.Fatal(d.Class)
		}
	}
}

// TestEnginesMdLines classifies every startup-failure line of engines.md §8
// (templates filled in) behind every prefix the engines and container
// runtimes write: the rehearsal engine prints these lines to fail "in a
// class", and each must come back as that class.
func TestEnginesMdLines(t *testing.T) {
	lines := []struct{ class, text string }{
		{KVTooSmall, "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (2.10 GiB). Based on the available memory, the estimated maximum model length is 17200. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."},
		{KVTooSmall, "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (20000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."},
		{NoKVMemory, "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."},
		{NoKVMemory, "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."},
		{FreeMemBelowUtil, "ValueError: Free memory on device cuda:0 (20.31/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."},
		{FreeMemBelowUtil, "AssertionError: Error in memory profiling. Initial free memory 60.1 GiB, current free memory 62.4 GiB. This happens when the GPU memory was not properly cleaned up before initializing the vLLM instance."},
		// A lone out-of-memory line does not say what ran out: unknown, not a
		// guess at the weights (with a load_model frame it is oom_weights).
		{Unknown, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 350.00 MiB. GPU 0 has a total capacity of 23.68 GiB of which 212.81 MiB is free."},
		{OOMWeights, "Failed to create unquantized linear weights: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 0 has a total capacity of 93.09 GiB of which 739.81 MiB is free."},
		{BadFlag, "ValueError: User-specified max_model_len (200000) is greater than the derived max_model_len (max_position_embeddings=131072 or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."},
		{UnsupportedArch, "ValueError: Model architectures ['FooForCausalLM'] are not supported for now. Supported architectures: dict_keys(['LlamaForCausalLM'])"},
		{UnsupportedArch, "ValueError: Model architecture MPTForCausalLM was supported in vLLM until v0.10.2, and is not supported anymore."},
		{MissingFiles, "ValueError: Invalid repository ID or local directory specified: '/models/x'."},
		{MissingFiles, "ValueError: Could not detect config format for no config file found. With config_format 'auto', ensure your model has either config.json (HF format) or params.json (Mistral format)."},
		{PortInUse, "OSError: [Errno 98] Address already in use"},
		{PortInUse, "error while attempting to bind on address ('0.0.0.0', 8000): address already in use"},
		{PortInUse, "RuntimeError: The server socket has failed to listen on any local network address. useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use"},
		{DriverMismatch, "RuntimeError: CUDA error: no kernel image is available for execution on the device"},
		{DriverMismatch, "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version"},
		{DriverMismatch, "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver."},
		{NCCLError, "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"},
		{BadFlag, "KeyError: 'invalid tool call parser: foo (chose from { hermes,mistral })'"},
		{BadFlag, "KeyError: 'invalid reasoning parser: foo (chose from { deepseek_r1,qwen3 })'"},
		{SGLangMemFraction, "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: self.server_args.mem_fraction_static=0.88"},
		{FreeMemBelowUtil, "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. min_per_gpu_memory=38.12, local_gpu_memory=78.50"},
		{BadFlag, "ValueError: Warning: User-specified context_length (200000) is greater than the derived context_length (40960). This may lead to incorrect model outputs or CUDA errors."},
		{UnsupportedArch, "Model architectures ['FooForCausalLM'] failed to be inspected. Please check the logs for more details."},
		{PortInUse, "Port is already in use. dist_init_port=5000 port_base=5001 detokenizer_port=5002 nccl_port=5003 scheduler_input_port=5004"},
		{PortInUse, "[Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use"},
		{Unknown, "Received sigquit from a child process. It usually means the child failed."},
		{Unknown, "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds."},
		{Unknown, "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}"},
	}
	prefixes := []string{
		"",
		"(EngineCore_DP0 pid=4242) ERROR 05-29 10:00:00 [core.py:708] ",
		"(VllmWorker rank=1 pid=4301) ERROR 05-29 10:00:00 [multiproc_executor.py:585] ",
		"(Worker_TP1 pid=4301) ERROR 05-29 10:00:00 [multiproc_executor.py:743] ",
		"(APIServer pid=4100) ",
		"ERROR 04-30 10:00:31 [core.py:396] ",
		"ERROR 08-19 07:51:03 engine.py:366] ",
		"[rank0]: ",
		"[2025-12-11 10:00:00 TP0] ",
		"[2025-12-11 10:00:00 DP0 TP1] ",
		"[2025-12-11 10:00:00] ",
		"vllm-1  | (EngineCore_DP0 pid=140) ERROR 05-29 10:00:00 [core.py:708] ",
		"sglang-1  | [2025-12-11 10:00:00 TP0] ",
		"server_1  | ",
		"\x1b[1;36m(EngineCore_DP0 pid=4242)\x1b[0;0m \x1b[31mERROR\x1b[0m 05-29 10:00:00 [core.py:708] ",
		"2025-12-11T10:00:00.123456789Z ",
		"[2026-08-21T19:42:40Z] (EngineCore pid=522) ERROR 08-21 19:42:40 [core.py:1354] ",
	}
	for _, l := range lines {
		for _, p := range prefixes {
			d := Classify([]byte(p + l.text + "\n"))
			if d.Class != l.class {
				t.Errorf("%s%.70s… → %s, want %s", p, l.text, d.Class, l.class)
			}
		}
	}
}
