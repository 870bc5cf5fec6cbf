package rehearsal

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/roofline/roofline/internal/vram"
)

// The engines' own error texts (engines.md §8) and the tracebacks that carry
// them. Frames are "file:line:function:code" with the site-packages prefix
// added by frame().

const (
	vllmSite   = "/usr/local/lib/python3.12/site-packages/vllm/"
	sglangSite = "/usr/local/lib/python3.12/dist-packages/sglang/"
	torchSite  = "/usr/local/lib/python3.12/site-packages/torch/"
)

func gibf(b float64) string { return fmt.Sprintf("%.2f", b/vram.GiB) }

// cudaOOM is PyTorch's out-of-memory message.
func cudaOOM(gpuIndex int, totalGiB, freeMiB, tryGiB float64) string {
	return fmt.Sprintf("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU %d has a total capacity of %.2f GiB of which %.2f MiB is free. "+
		"Including non-PyTorch memory, this process has %.2f GiB memory in use. Of the allocated memory %.2f GiB is allocated by PyTorch, and 20.03 MiB is reserved by PyTorch but unallocated. "+
		"If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "+
		"See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
		tryGiB, gpuIndex, totalGiB, freeMiB, totalGiB-freeMiB/1024, totalGiB-freeMiB/1024-0.5)
}

// workerError is the exception a worker raises for a failure class, with the
// frames below the engine core's constructor.
// driverFound is the "found version" of PyTorch's driver message: the
// driver's CUDA version as 1000*major + 10*minor.
func (e *engineRun) driverFound() int {
	major, minor, _ := strings.Cut(e.cudaDrv, ".")
	a, errA := strconv.Atoi(major)
	b, _ := strconv.Atoi(minor)
	if errA != nil || a <= 0 {
		return 11040
	}
	return a*1000 + b*10
}

func (e *engineRun) workerError(f failure) (frames []string, exc string) {
	g := e.gpus[0]
	total := float64(g.CUDATotalBytes())
	var r *vram.Rank
	if e.res != nil && len(e.res.Ranks) > 0 {
		r = &e.res.Ranks[0]
	}
	if e.kind == KindSGLang {
		return e.sglangWorkerError(f, total, r)
	}
	v := vllmSite
	initFrames := []string{
		v + "v1/executor/abstract.py:103:__init__:self._init_executor()",
		v + "v1/executor/uniproc_executor.py:47:_init_executor:self.driver_worker.init_device()",
		v + "v1/worker/worker_base.py:326:init_device:self.worker.init_device()  # type: ignore",
	}
	loadFrames := []string{
		v + "v1/executor/abstract.py:103:__init__:self._init_executor()",
		v + "v1/executor/uniproc_executor.py:49:_init_executor:self.driver_worker.load_model()",
		v + "v1/worker/gpu_worker.py:289:load_model:self.model_runner.load_model(eep_scale_up=eep_scale_up)",
		v + "v1/worker/gpu_model_runner.py:3587:load_model:self.model = model_loader.load_model(",
		v + "model_executor/model_loader/base_loader.py:56:load_model:self.load_weights(model, model_config)",
		v + "model_executor/model_loader/default_loader.py:294:load_weights:loaded_weights = model.load_weights(",
	}
	kvFrames := []string{
		v + "v1/engine/core.py:247:_initialize_kv_caches:kv_cache_configs = get_kv_cache_configs(",
		v + "v1/core/kv_cache_utils.py:1322:get_kv_cache_configs:_check_enough_kv_cache_memory(",
		v + "v1/core/kv_cache_utils.py:687:_check_enough_kv_cache_memory:raise ValueError(",
	}
	switch f.class {
	case ClassDriverMismatch:
		return append(initFrames, v+"v1/worker/gpu_worker.py:206:init_device:torch.cuda.set_device(self.device)",
				torchSite+"cuda/__init__.py:567:set_device:torch._C._cuda_setDevice(device)"),
			fmt.Sprintf("RuntimeError: The NVIDIA driver on your system is too old (found version %d).", e.driverFound()) + " Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver."
	case ClassNCCLError:
		return append(initFrames, v+"v1/worker/gpu_worker.py:239:init_device:init_worker_distributed_environment(self.vllm_config, self.rank,",
				v+"distributed/device_communicators/pynccl.py:137:__init__:self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
				v+"distributed/device_communicators/pynccl_wrapper.py:395:NCCL_CHECK:raise RuntimeError(f\"NCCL error: {error_str}\")"),
			"RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
	case ClassFreeMemBelowUtil:
		free, req := total*e.util-2*vram.GiB, total*e.util
		if r != nil && f.detail != "injected" {
			free = float64(r.FreeBytes)
		}
		return append(initFrames, v+"v1/worker/gpu_worker.py:252:init_device:raise ValueError("),
			fmt.Sprintf("ValueError: Free memory on device cuda:0 (%s/%s GiB) on startup is less than desired GPU memory utilization (%v, %s GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
				gibf(free), gibf(total), e.util, gibf(req))
	case ClassOOMWeights:
		free := 312.0
		return append(loadFrames, v+"model_executor/layers/linear.py:245:create_weights:weight = Parameter(torch.empty(sum(output_partition_sizes),"),
			cudaOOM(g.Index, total/vram.GiB, free, 1.16)
	case ClassMissingFiles:
		switch {
		case strings.HasPrefix(f.detail, "shard:"):
			return append(loadFrames, v+"model_executor/model_loader/weight_utils.py:540:safetensors_weights_iterator:with safe_open(st_file, framework=\"pt\") as f:"),
				fmt.Sprintf("FileNotFoundError: [Errno 2] No such file or directory: '%s/%s'", e.modelPath, strings.TrimPrefix(f.detail, "shard:"))
		case strings.HasPrefix(f.detail, "header:"):
			return append(loadFrames, v+"model_executor/model_loader/weight_utils.py:540:safetensors_weights_iterator:with safe_open(st_file, framework=\"pt\") as f:"),
				"safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer"
		}
		return append(loadFrames[:5], v+"model_executor/model_loader/default_loader.py:175:_prepare_weights:raise RuntimeError("),
			fmt.Sprintf("RuntimeError: Cannot find any model weights with `%s`", e.modelPath)
	case ClassNoKVMemory:
		msg := "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
		if !versionLess(e.version, "0.10") {
			msg += " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
		}
		return kvFrames, msg
	case ClassKVTooSmall:
		needed, avail, est := e.kvShortfall(r)
		if e.v0 {
			return []string{v + "engine/llm_engine.py:435:_initialize_kv_caches:self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)",
					v + "worker/worker.py:338:initialize_cache:raise_if_cache_size_invalid(",
					v + "worker/worker.py:585:raise_if_cache_size_invalid:raise ValueError("},
				fmt.Sprintf("ValueError: The model's max seq len (%d) is larger than the maximum number of tokens that can be stored in KV cache (%d). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.", e.maxLen, est)
		}
		msg := fmt.Sprintf("ValueError: To serve at least one request with the models's max seq len (%d), (%.2f GiB KV cache is needed, which is larger than the available KV cache memory (%.2f GiB). Based on the available memory, the estimated maximum model length is %d. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			e.maxLen, needed, avail, est)
		if !versionLess(e.version, "0.10") {
			msg += " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
		}
		return kvFrames, msg
	case ClassOOMCudagraph:
		return []string{v + "v1/engine/core.py:261:_initialize_kv_caches:self.model_executor.initialize_from_config(kv_cache_configs)",
				v + "v1/worker/gpu_worker.py:455:compile_or_warm_up_model:cuda_graph_memory_bytes = self.model_runner.capture_model()",
				v + "v1/worker/gpu_model_runner.py:4331:capture_model:self._capture_cudagraphs(",
				v + "v1/worker/gpu_model_runner.py:4410:_capture_cudagraphs:self._dummy_run(",
				torchSite + "cuda/graphs.py:88:capture_end:super().capture_end()"},
			cudaOOM(g.Index, total/vram.GiB, 180.0, 0.5)
	}
	return nil, "RuntimeError: rehearsal: unknown failure " + f.class
}

// kvShortfall returns the KV GiB one request needs, the GiB available and
// the longest context that fits, from the plan (or made up for an injected
// failure on a model that fits).
func (e *engineRun) kvShortfall(r *vram.Rank) (needed, avail float64, est int) {
	if r != nil && r.KVBudgetBytes > 0 && uint64(r.KVBudgetBytes) < r.NeededBytes {
		needed, avail = float64(r.NeededBytes)/vram.GiB, float64(r.KVBudgetBytes)/vram.GiB
		if r.KVBytesPerToken > 0 {
			est = int(uint64(r.KVBudgetBytes) / r.KVBytesPerToken)
			est -= est % max(e.blockSize, 1)
		}
		return needed, avail, est
	}
	needed = 8.0
	if r != nil && r.NeededBytes > 0 {
		needed = float64(r.NeededBytes) / vram.GiB
	}
	return needed, needed / 2, e.maxLen / 2
}

func (e *engineRun) sglangWorkerError(f failure, total float64, r *vram.Rank) ([]string, string) {
	s := sglangSite
	runner := []string{
		s + "srt/managers/scheduler.py:2658:run_scheduler_process:scheduler = Scheduler(",
		s + "srt/managers/scheduler.py:312:__init__:self.tp_worker = TpModelWorker(",
		s + "srt/managers/tp_worker.py:237:__init__:self._model_runner = ModelRunner(",
		s + "srt/model_executor/model_runner.py:322:__init__:self.initialize(min_per_gpu_memory)",
	}
	switch f.class {
	case ClassDriverMismatch:
		return append(runner[:3], s+"srt/model_executor/model_runner.py:301:__init__:min_per_gpu_memory = self.init_torch_distributed()",
				torchSite+"cuda/__init__.py:567:set_device:torch._C._cuda_setDevice(device)"),
			fmt.Sprintf("RuntimeError: The NVIDIA driver on your system is too old (found version %d).", e.driverFound()) + " Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver."
	case ClassNCCLError:
		return append(runner[:3], s+"srt/model_executor/model_runner.py:301:__init__:min_per_gpu_memory = self.init_torch_distributed()",
				torchSite+"distributed/distributed_c10d.py:4807:barrier:work = group.barrier(opts=opts)"),
			"torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3\nncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error."
	case ClassFreeMemBelowUtil:
		return append(runner[:3], s+"srt/model_executor/model_runner.py:301:__init__:min_per_gpu_memory = self.init_torch_distributed()",
				s+"srt/model_executor/model_runner.py:724:init_torch_distributed:raise ValueError("),
			"ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. " +
				fmt.Sprintf("min_per_gpu_memory=%.3f, local_gpu_memory=%.3f, local_gpu_memory * 0.9=%.3f", total/vram.GiB*0.6, total/vram.GiB, total/vram.GiB*0.9)
	case ClassOOMWeights:
		return append(runner, s+"srt/model_executor/model_runner.py:812:load_model:self.model = get_model(",
				s+"srt/model_loader/loader.py:590:load_model:model = _initialize_model("),
			cudaOOM(e.gpus[0].Index, total/vram.GiB, 312.0, 1.16)
	case ClassMissingFiles:
		return append(runner, s+"srt/model_executor/model_runner.py:812:load_model:self.model = get_model(",
				s+"srt/model_loader/loader.py:433:_prepare_weights:raise RuntimeError("),
			fmt.Sprintf("RuntimeError: Cannot find any model weights with `%s`", e.modelPath)
	case ClassUnsupportedArch:
		return append(runner, s+"srt/models/registry.py:74:resolve_model_cls:return self._raise_for_unsupported(architectures)",
				s+"srt/models/registry.py:45:_raise_for_unsupported:raise ValueError("),
			e.unsupportedArch()
	case ClassSGLangMemFraction:
		return append(runner, s+"srt/model_executor/model_runner.py:1768:init_memory_pool:raise RuntimeError("),
			fmt.Sprintf("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: self.server_args.mem_fraction_static=%v", e.util)
	case ClassOOMCudagraph:
		return append(runner, s+"srt/model_executor/model_runner.py:2013:init_device_graphs:self.graph_runner = graph_runners[self.device](self)",
				s+"srt/model_executor/cuda_graph_runner.py:378:__init__:raise Exception(",
			),
			"Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of " +
				fmt.Sprintf("%.2f GiB of which 180.00 MiB is free.", total/vram.GiB) +
				"\nPossible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n3. disable torch compile by not using --enable-torch-compile\n4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\nOpen an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose "
	}
	return nil, "RuntimeError: rehearsal: unknown failure " + f.class
}

// unsupportedArch is the ValueError both engines raise (they share the
// model registry's wording).
func (e *engineRun) unsupportedArch() string {
	return fmt.Sprintf("ValueError: Model architectures %s are not supported for now. Supported architectures: dict_keys(%s)",
		pyList(e.architectures()), pyList(supportedArchitectures))
}

func (e *engineRun) architectures() []string {
	if e.info != nil && e.info.Config != nil && len(e.info.Config.Architectures) > 0 {
		return e.info.Config.Architectures
	}
	return []string{"RehearsalInjectedForCausalLM"}
}

func pyList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = pyStrRepr(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// apiError is an exception the API server (vLLM) or the main process
// (SGLang) raises while reading the configuration, before the worker starts.
func (e *engineRun) apiError(f failure) (frames []string, exc string) {
	v := vllmSite
	if e.kind == KindSGLang {
		s := sglangSite
		frames = []string{
			"<frozen runpy>:88:_run_code:exec(code, run_globals)",
			s + "launch_server.py:29:<module>:launch_server(server_args)",
			s + "srt/entrypoints/http_server.py:1335:launch_server:tokenizer_manager, template_manager, scheduler_info, port_args = _launch_subprocesses(",
			s + "srt/entrypoints/engine.py:880:_launch_subprocesses:tokenizer_manager = TokenizerManager(server_args, port_args)",
			s + "srt/managers/tokenizer_manager.py:208:__init__:self.model_config = ModelConfig.from_server_args(",
		}
		switch f.class {
		case ClassMissingFiles:
			if f.detail == "tokenizer" {
				return frames, e.tokenizerError()
			}
			return frames, fmt.Sprintf("OSError: %s does not appear to have a file named config.json. Checkout 'https://huggingface.co/%s/tree/None' for available files.", e.modelPath, e.modelPath)
		case ClassBadFlag:
			return frames, fmt.Sprintf("ValueError: Warning: User-specified context_length (%d) is greater than the derived context_length (%d). This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from max_position_embeddings in the model's config. To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", e.maxLen, e.modelLimit())
		case "tp_heads":
			return frames, fmt.Sprintf("AssertionError: Number of attention heads (%d) must be divisible by tensor parallel size (%d).", e.info.Config.NumAttentionHeads, e.tp)
		case "no_gpu", "too_few_gpus":
			return frames, "RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1"
		}
		return frames, "RuntimeError: rehearsal: unknown failure " + f.class
	}
	frames = []string{
		"/usr/local/bin/vllm:10:<module>:sys.exit(main())",
		v + "entrypoints/cli/main.py:73:main:args.dispatch_function(args)",
		v + "entrypoints/cli/serve.py:60:cmd:uvloop.run(run_server(args))",
		v + "entrypoints/openai/api_server.py:1950:run_server_worker:async with build_async_engine_client(",
		v + "entrypoints/openai/api_server.py:185:build_async_engine_client_from_engine_args:vllm_config = engine_args.create_engine_config(usage_context=usage_context)",
		v + "engine/arg_utils.py:1318:create_engine_config:model_config = self.create_model_config()",
	}
	switch f.class {
	case ClassMissingFiles:
		if f.detail == "tokenizer" {
			return frames, e.tokenizerError()
		}
		return append(frames, v+"transformers_utils/config.py:571:get_config:raise ValueError("),
			fmt.Sprintf("ValueError: Invalid repository ID or local directory specified: '%s'.\nPlease verify the following requirements:\n"+
				"1. Provide a valid Hugging Face repository ID.\n2. Specify a local directory that contains a recognized configuration file.\n"+
				"   - For Hugging Face models: ensure the presence of a 'config.json'.\n   - For Mistral models: ensure the presence of a 'params.json'.", e.modelPath)
	case ClassUnsupportedArch:
		return append(frames, v+"model_executor/models/registry.py:913:inspect_model_cls:return self._raise_for_unsupported(architectures)",
				v+"model_executor/models/registry.py:863:_raise_for_unsupported:raise ValueError("),
			e.unsupportedArch()
	case ClassBadFlag:
		return append(frames, v+"config/model.py:2261:_get_and_verify_max_len:raise ValueError(msg)"),
			fmt.Sprintf("ValueError: User-specified max_model_len (%d) is greater than the derived max_model_len (max_position_embeddings=%d or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds error.",
				e.maxLen, e.modelLimit())
	case "tp_heads":
		return append(frames, v+"config/parallel.py:512:verify_with_model_config:raise ValueError("),
			fmt.Sprintf("ValueError: Total number of attention heads (%d) must be divisible by tensor parallel size (%d).", e.info.Config.NumAttentionHeads, e.tp)
	case "no_gpu":
		return append(frames, v+"config/device.py:58:__post_init__:raise RuntimeError("),
			"RuntimeError: Failed to infer device type, please set the environment variable `VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging to help debug the issue."
	case "too_few_gpus":
		return append(frames, v+"config/parallel.py:602:__post_init__:raise ValueError("),
			fmt.Sprintf("ValueError: World size (%d) is larger than the number of available GPUs (%d) in this node. If this is intentional and you are using:\n- ray, set '--distributed-executor-backend ray'.\n- multiprocessing, set '--nnodes' appropriately.", e.tp*e.pp, len(e.gpus))
	}
	return frames, "RuntimeError: rehearsal: unknown failure " + f.class
}

func (e *engineRun) tokenizerError() string {
	return fmt.Sprintf("OSError: Can't load tokenizer for '%s'. If you were trying to load it from 'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, make sure '%s' is the correct path to a directory containing all relevant files for a PreTrainedTokenizerFast tokenizer.", e.modelPath, e.modelPath)
}
