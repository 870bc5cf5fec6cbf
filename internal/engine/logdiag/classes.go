package logdiag

// Class ids. They are part of roofline's interface (`roofline diagnose
// -json` prints them as "class"; the rehearsal engine injects them), so they
// never change.
const (
	OOMWeights        = "oom_weights"
	KVTooSmall        = "kv_too_small"
	NoKVMemory        = "no_kv_memory"
	FreeMemBelowUtil  = "free_mem_below_util"
	PortInUse         = "port_in_use"
	MissingFiles      = "missing_files"
	UnsupportedArch   = "unsupported_arch"
	DriverMismatch    = "driver_mismatch"
	NCCLError         = "nccl_error"
	BadFlag           = "bad_flag"
	OOMCUDAGraph      = "oom_cudagraph"
	SGLangMemFraction = "sglang_mem_fraction"
	Unknown           = "unknown"
)

// ClassInfo describes one failure class for docs, for `roofline diagnose`
// and for the rehearsal engine's failure injection.
type ClassInfo struct {
	ID     string
	Title  string
	Cause  string
	Action string
	// Example is a short excerpt in a real engine's log format (vLLM V1
	// unless the class is SGLang's) that Classify names as ID; the rehearsal
	// engine can print it to fail "in that way". Empty for unknown.
	Example []string
}

// Classes returns every class, unknown last. The slice is a fresh copy.
func Classes() []ClassInfo {
	out := make([]ClassInfo, len(classes))
	for i, c := range classes {
		c.Example = append([]string(nil), c.Example...)
		out[i] = c
	}
	return out
}

// Info returns the description of class id (that of unknown for an id that
// does not exist).
func Info(id string) ClassInfo {
	for _, c := range classes {
		if c.ID == id {
			return c
		}
	}
	return classes[len(classes)-1]
}

// vram names the planner command with the flags every action should repeat.
const vramCmd = "`roofline vram -model DIR -tp N -ctx LEN`"

var classes = []ClassInfo{
	{
		ID:     OOMWeights,
		Title:  "CUDA out of memory while loading the weights",
		Cause:  "The model's weights do not fit in the GPUs' memory at this tensor_parallel, or another process holds part of it.",
		Action: "Check the fit with " + vramCmd + " and the free memory with `roofline gpu`; raise tensor_parallel (more GPUs) or use an FP8/AWQ build of the model.",
		Example: []string{
			"(EngineCore_DP0 pid=4242) INFO 05-29 10:00:02 [gpu_model_runner.py:2602] Starting to load model /models/Qwen3-32B...",
			"(EngineCore_DP0 pid=4242) ERROR 05-29 10:00:09 [core.py:708] EngineCore failed to start.",
			"(EngineCore_DP0 pid=4242) ERROR 05-29 10:00:09 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 350.00 MiB. GPU 0 has a total capacity of 23.68 GiB of which 212.81 MiB is free. Including non-PyTorch memory, this process has 23.46 GiB memory in use.",
			"(APIServer pid=4100) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}",
		},
	},
	{
		ID:     KVTooSmall,
		Title:  "KV cache too small for max_model_len",
		Cause:  "After the weights and the activation peak, the KV cache cannot hold even one request of max_model_len tokens.",
		Action: "Lower max_model_len (at most the engine's estimate), raise gpu_memory_utilization or tensor_parallel, or set kv_cache_dtype = \"fp8\"; " + vramCmd + " shows the largest max_model_len that fits.",
		Example: []string{
			"(EngineCore_DP0 pid=4242) INFO 05-29 10:01:10 [gpu_worker.py:298] Available KV cache memory: 2.10 GiB",
			"(EngineCore_DP0 pid=4242) ERROR 05-29 10:01:10 [core.py:708] ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (2.10 GiB). Based on the available memory, the estimated maximum model length is 17200. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
		},
	},
	{
		ID:     NoKVMemory,
		Title:  "No GPU memory left for the KV cache",
		Cause:  "The weights and the profiling peak use all of total × gpu_memory_utilization: nothing is left for KV blocks.",
		Action: "Raise gpu_memory_utilization or tensor_parallel, or use a quantized build of the model; check with " + vramCmd + ".",
		Example: []string{
			"(EngineCore_DP0 pid=4242) INFO 05-29 10:01:10 [gpu_worker.py:298] Available KV cache memory: -1.25 GiB",
			"(EngineCore_DP0 pid=4242) ERROR 05-29 10:01:10 [core.py:708] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
		},
	},
	{
		ID:     FreeMemBelowUtil,
		Title:  "GPU memory already in use at start",
		Cause:  "Another process holds GPU memory, so the free memory at start is below what gpu_memory_utilization asks for (vLLM), or the GPUs are unevenly occupied (SGLang).",
		Action: "Find the other processes with `roofline gpu` and stop them (an old server of this config: `roofline destroy -target server.NAME`), or lower gpu_memory_utilization, or pick other gpus.",
		Example: []string{
			"(EngineCore_DP0 pid=4242) ERROR 05-29 10:00:01 [core.py:708] ValueError: Free memory on device cuda:0 (20.31/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
		},
	},
	{
		ID:     PortInUse,
		Title:  "Port already in use",
		Cause:  "An old engine process or another server already listens on the port.",
		Action: "Stop the old server (`roofline destroy -target server.NAME`, or the process `ss -ltnp` names) or give this server another port; `roofline gpu` lists foreign processes on the GPUs.",
		Example: []string{
			"(APIServer pid=4100) INFO 05-29 10:00:00 [api_server.py:1885] vLLM API server version 0.16.0",
			"(APIServer pid=4100) OSError: [Errno 98] Address already in use",
		},
	},
	{
		ID:     MissingFiles,
		Title:  "Model files missing or incomplete",
		Cause:  "The model directory lacks config.json, the tokenizer or weight files, or a file is truncated (an incomplete transfer).",
		Action: "Check the model block's path and run `roofline model verify DIR` to compare the files with their sha256 list; copy the missing or damaged files again.",
		Example: []string{
			"(APIServer pid=4100) ValueError: Invalid repository ID or local directory specified: '/models/Qwen3-8B'.",
			"(APIServer pid=4100) Please verify the following requirements:",
			"(APIServer pid=4100) 1. Provide a valid Hugging Face repository ID.",
			"(APIServer pid=4100) 2. Specify a local directory that contains a recognized configuration file.",
		},
	},
	{
		ID:     UnsupportedArch,
		Title:  "Model architecture not supported by this engine version",
		Cause:  "The engine (or the transformers it ships) is older than the model, or newer than the engine's support for it.",
		Action: "Add an engine block with an engine version that supports the architecture (newer, or older where the engine dropped it) and point the server at it (`roofline plan` probes the new engine and checks its flags); keep the old engine block until the new server passes its gates.",
		Example: []string{
			"(APIServer pid=4100) ValueError: Model architectures ['Qwen3NextForCausalLM'] are not supported for now. Supported architectures: dict_keys(['AquilaModel', 'LlamaForCausalLM', 'Qwen2ForCausalLM'])",
		},
	},
	{
		ID:     DriverMismatch,
		Title:  "Driver, CUDA or torch build mismatch",
		Cause:  "The NVIDIA driver, the CUDA runtime and the engine's torch and kernel builds do not match each other or this GPU.",
		Action: "Restore the pinned engine, torch, CUDA and driver versions recorded in the journal; `roofline gpu` shows the driver and CUDA version of this host.",
		Example: []string{
			"(EngineCore_DP0 pid=4242) ERROR 05-29 10:00:05 [core.py:708] RuntimeError: CUDA error: no kernel image is available for execution on the device",
			"(EngineCore_DP0 pid=4242) ERROR 05-29 10:00:05 [core.py:708] CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
		},
	},
	{
		ID:     NCCLError,
		Title:  "NCCL / tensor-parallel initialisation failed",
		Cause:  "The GPUs of the tensor-parallel group could not set up communication (NCCL).",
		Action: "Check with `roofline gpu` that the server's gpus are healthy and in one NVLink/PCIe group; add NCCL_DEBUG = \"INFO\" to the engine's env and read the NCCL lines; in containers give /dev/shm enough room; NCCL_P2P_DISABLE = \"1\" isolates a P2P problem.",
		Example: []string{
			"(VllmWorker rank=1 pid=4301) ERROR 05-29 10:00:12 [multiproc_executor.py:585] RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
		},
	},
	{
		ID:     BadFlag,
		Title:  "The engine rejected a flag or a value",
		Cause:  "A flag this engine version does not know, a value outside its choices, or a combination of values it refuses.",
		Action: "Compare the flags with the installed engine's list (`roofline flags ENGINE QUERY`) and fix the server attribute or extra_args; `roofline plan` checks flags before launch.",
		Example: []string{
			"usage: vllm serve [model_tag] [options]",
			"vllm serve: error: unrecognized arguments: --swap-space 4",
		},
	},
	{
		ID:     OOMCUDAGraph,
		Title:  "CUDA out of memory while capturing CUDA graphs",
		Cause:  "CUDA graphs are captured after the KV cache is allocated and must fit in the headroom left by gpu_memory_utilization (SGLang: mem_fraction_static).",
		Action: "Lower gpu_memory_utilization by 0.03-0.05 or lower max_num_seqs, or set enforce_eager = true (slower); " + vramCmd + " shows the headroom.",
		Example: []string{
			"(EngineCore_DP0 pid=4242) INFO 05-29 10:01:20 [gpu_model_runner.py:3480] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 40%|████      | 27/67 [00:02<00:03, 12.1it/s]",
			"(EngineCore_DP0 pid=4242) ERROR 05-29 10:01:22 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 30.69 MiB is free.",
		},
	},
	{
		ID:     SGLangMemFraction,
		Title:  "SGLang: no room for the KV cache under mem_fraction_static",
		Cause:  "The weights take (nearly) all of mem_fraction_static × free memory, so SGLang's KV pool would be empty.",
		Action: "Raise gpu_memory_utilization (SGLang's --mem-fraction-static) or tensor_parallel, or use a quantized build; check with `roofline vram -engine sglang -model DIR -tp N -ctx LEN`.",
		Example: []string{
			"[2025-12-11 10:00:08 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=3.10 GB, mem usage=61.03 GB.",
			"[2025-12-11 10:00:08 TP0] Scheduler hit an exception: Traceback (most recent call last):",
			"RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: self.server_args.mem_fraction_static=0.8",
			"[2025-12-11 10:00:09] Received sigquit from a child process. It usually means the child failed.",
		},
	},
	{
		ID:     Unknown,
		Title:  "Cause not recognised",
		Cause:  "None of the startup failures roofline knows matches the end of the log.",
		Action: "Read the evidence lines and the whole log (`roofline logs SERVER`): the root cause is usually the first exception of the last traceback.",
	},
}
