package rehearsal

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/vram"
)

// The log lines of a start, in each engine version's real wording and
// order (engines.md §8, vram.md §2-3).

func (e *engineRun) v016() bool { return e.kind == KindVLLM && !versionLess(e.version, "0.10") }

// commas writes 394880 as "394,880", as vLLM's f"{n:,}" does.
func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func (e *engineRun) logStart(l *logger) {
	if e.kind == KindSGLang {
		l.info("", fmt.Sprintf("server_args=ServerArgs(model_path=%s, tokenizer_path=%s, tokenizer_mode='auto', host=%s, port=%d, "+
			"served_model_name=%s, context_length=%s, mem_fraction_static=%s, max_running_requests=%s, tp_size=%d, pp_size=%d, "+
			"kv_cache_dtype=%s, tool_call_parser=%s, reasoning_parser=%s, enable_metrics=%s, version=%s)",
			pyStrRepr(e.modelPath), pyStrRepr(e.modelPath), pyStrRepr(e.host), e.port, pyStrRepr(e.served[0]),
			pyOpt(e.args.Str("context_length", "")), pyOpt(e.args.Str("mem_fraction_static", "")),
			pyOpt(e.args.Str("max_running_requests", "")), e.tp, e.pp, pyStrRepr(e.kvDtype),
			pyOptStr(e.toolParser), pyOptStr(e.reasoningParser), pyBool(e.metrics), pyStrRepr(e.version)))
		return
	}
	if e.v016() {
		l.info("api_server.py:1839", "vLLM API server version "+e.version)
		l.info("utils.py:253", "non-default args: "+e.nonDefault())
		return
	}
	l.info("api_server.py:1043", "vLLM API server version "+e.version)
	l.info("api_server.py:1044", "args: Namespace(subparser='serve', model_tag="+pyStrRepr(e.modelPath)+", "+
		strings.Trim(strings.ReplaceAll(strings.ReplaceAll(e.nonDefault(), "': ", "="), "'", ""), "{}")+")")
}

func pyOpt(v string) string {
	if v == "" {
		return "None"
	}
	return v
}

func pyOptStr(v string) string {
	if v == "" {
		return "None"
	}
	return pyStrRepr(v)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func (e *engineRun) arch() string {
	if a := e.architectures(); len(a) > 0 {
		return a[0]
	}
	return "LlamaForCausalLM"
}

// logConfig writes what the main process logs after reading the model's config.
func (e *engineRun) logConfig(l *logger) {
	if e.kind == KindSGLang {
		return
	}
	if e.v016() {
		l.info("model.py:547", "Resolved architecture: "+e.arch())
		l.info("model.py:1510", fmt.Sprintf("Using max model len %d", e.maxLen))
		l.info("scheduler.py:205", fmt.Sprintf("Chunked prefill is enabled with max_num_batched_tokens=%d.", e.mbt))
		return
	}
	l.info("config.py:717", "This model supports multiple tasks: {'generate', 'reward', 'classify', 'embed', 'score'}. Defaulting to 'generate'.")
	if !e.v0 {
		l.info("config.py:2003", fmt.Sprintf("Chunked prefill is enabled with max_num_batched_tokens=%d.", e.mbt))
	}
}

// sleepFrac sleeps a share of the load time and returns how long it took.
func (e *engineRun) sleepFrac(f float64) time.Duration {
	start := time.Now()
	time.Sleep(time.Duration(float64(e.k.loadTime) * f))
	return time.Since(start)
}

func (e *engineRun) rank0() vram.Rank {
	if e.res != nil && len(e.res.Ranks) > 0 {
		return e.res.Ranks[0]
	}
	return vram.Rank{}
}

// workerPhase is where a failure class strikes in the worker.
func workerPhase(class string) string {
	switch class {
	case ClassDriverMismatch, ClassNCCLError, ClassFreeMemBelowUtil:
		return "init"
	case ClassOOMWeights, ClassMissingFiles, ClassUnsupportedArch:
		return "load"
	case ClassNoKVMemory, ClassKVTooSmall, ClassSGLangMemFraction:
		return "profile"
	case ClassOOMCudagraph:
		return "capture"
	}
	return ""
}

// load is the worker's start: init, weights, memory profile, CUDA graphs.
// It returns false after logging a failure. With never_healthy (vLLM) it
// never returns: the load hangs.
func (e *engineRun) load(l *logger) bool {
	start := time.Now()
	phase := workerPhase(e.failure.class)
	fail := func() bool {
		e.logWorkerError(l)
		return false
	}
	r := e.rank0()
	g := e.gpus[0]
	total := float64(g.CUDATotalBytes())
	sgl := e.kind == KindSGLang

	// Init: the engine config, torch.distributed.
	switch {
	case sgl:
		l.info("", "Init torch distributed begin.")
	case e.v016():
		l.info("core.py:93", "Waiting for init message from front-end.")
		l.info("core.py:98", e.engineConfigLine("V1"))
		l.info("parallel_state.py:1325", fmt.Sprintf("world_size=%d rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:41375 backend=nccl", e.tp*e.pp))
		l.info("parallel_state.py:1536", fmt.Sprintf("rank 0 in world size %d is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 0, EP rank 0", e.tp*e.pp))
	default:
		engine := "V1"
		if e.v0 {
			engine = "V0"
		}
		l.info("core.py:58", e.engineConfigLine(engine))
		l.info("parallel_state.py:1004", fmt.Sprintf("rank 0 in world size %d is assigned as DP rank 0, PP rank 0, TP rank 0", e.tp*e.pp))
	}
	e.sleepFrac(0.1)
	if phase == "init" {
		return fail()
	}
	if sgl {
		l.info("", "Init torch distributed ends. mem usage=0.00 GB")
	}

	// Weights.
	shards := 1
	if e.info != nil && len(e.info.Shards) > 0 {
		shards = len(e.info.Shards)
	}
	switch {
	case sgl:
		l.info("", fmt.Sprintf("Load weight begin. avail mem=%s GB", gibf(float64(r.FreeBytes))))
	case e.v016():
		l.info("gpu_model_runner.py:3560", "Starting to load model "+e.modelPath+"...")
		l.info("cuda.py:351", "Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION']")
	default:
		l.info("gpu_model_runner.py:1329", "Starting to load model "+e.modelPath+"...")
		l.info("cuda.py:221", "Using Flash Attention backend on V1 engine.")
	}
	if e.kind == KindVLLM && e.k.fail.neverHealthy {
		l.raw(fmt.Sprintf("Loading safetensors checkpoint shards:   0%% Completed | 0/%d [00:00<?, ?it/s]", shards))
		select {} // the load hangs: the server never binds, never answers
	}
	loadTook := e.sleepFrac(0.5)
	if phase == "load" {
		return fail()
	}
	l.raw(fmt.Sprintf("Loading safetensors checkpoint shards: 100%% Completed | %d/%d [00:%02d<00:00, %5.2fit/s]",
		shards, shards, int(loadTook.Seconds()), float64(shards)/max(loadTook.Seconds(), 0.01)))
	weights := float64(r.WeightsBytes)
	switch {
	case sgl:
		l.info("", fmt.Sprintf("Load weight end. type=%s, dtype=torch.bfloat16, avail mem=%s GB, mem usage=%s GB.",
			e.arch(), gibf(float64(r.FreeBytes)-weights), gibf(weights)))
	case e.v016():
		l.info("default_loader.py:314", fmt.Sprintf("Loading weights took %.2f seconds", loadTook.Seconds()*0.9))
		l.info("gpu_model_runner.py:3659", fmt.Sprintf("Model loading took %s GiB memory and %.6f seconds", gibf(weights), loadTook.Seconds()))
	default:
		l.info("loader.py:458", fmt.Sprintf("Loading weights took %.2f seconds", loadTook.Seconds()*0.9))
		l.info("gpu_model_runner.py:1347", fmt.Sprintf("Model loading took %.4f GiB and %.6f seconds", weights/vram.GiB, loadTook.Seconds()))
	}

	// Memory profile and KV cache.
	profTook := e.sleepFrac(0.15)
	kvBudget := float64(r.KVBudgetBytes)
	switch {
	case sgl:
	case e.v016():
		l.info("gpu_worker.py:375", fmt.Sprintf("Available KV cache memory: %s GiB", gibf(kvBudget)))
	default:
		req := total * e.util
		l.info("gpu_worker.py:189", fmt.Sprintf("Memory profiling takes %.2f seconds\n"+
			"the current vLLM instance can use total_gpu_memory (%sGiB) x gpu_memory_utilization (%.2f) = %sGiB\n"+
			"model weights take %sGiB; non_torch_memory takes %sGiB; PyTorch activation peak memory takes %sGiB; the rest of the memory reserved for KV Cache is %sGiB.",
			profTook.Seconds(), gibf(total), e.util, gibf(req), gibf(weights), gibf(float64(r.NonTorchBytes)),
			gibf(float64(r.ActivationBytes)), gibf(kvBudget)))
	}
	if phase == "profile" {
		return fail()
	}
	tokens := e.res.KVTokens
	switch {
	case sgl:
		half := float64(tokens+int64(max(e.blockSize, 1))) * float64(r.KVBytesPerToken) / 2
		if e.isMLA() {
			l.info("", fmt.Sprintf("KV Cache is allocated. #tokens: %d, KV size: %s GB", tokens, gibf(2*half)))
		} else {
			l.info("", fmt.Sprintf("KV Cache is allocated. #tokens: %d, K size: %s GB, V size: %s GB", tokens, gibf(half), gibf(half)))
		}
		l.info("", fmt.Sprintf("Memory pool end. avail mem=%s GB", gibf(float64(r.FreeBytes)-weights-2*half)))
	case e.v0:
		l.info("executor_base.py:112", fmt.Sprintf("# cuda blocks: %d, # CPU blocks: %d", tokens/int64(e.blockSize), 2048))
		l.info("executor_base.py:117", fmt.Sprintf("Maximum concurrency for %d tokens per request: %.2fx", e.maxLen, e.res.MaxConcurrency))
	case e.v016():
		l.info("kv_cache_utils.py:1291", fmt.Sprintf("GPU KV cache size: %s tokens", commas(tokens)))
		l.info("kv_cache_utils.py:1296", fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", commas(int64(e.maxLen)), e.res.MaxConcurrency))
	default:
		l.info("kv_cache_utils.py:634", fmt.Sprintf("GPU KV cache size: %s tokens", commas(tokens)))
		l.info("kv_cache_utils.py:637", fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", commas(int64(e.maxLen)), e.res.MaxConcurrency))
	}

	// CUDA graphs.
	graphs := float64(r.CUDAGraphBytes)
	if !e.eager {
		if sgl {
			l.info("", fmt.Sprintf("Capture cuda graph begin. This can take up to several minutes. avail mem=%s GB", gibf(float64(r.FreeBytes)-weights-kvBudget)))
		} else {
			l.raw("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 [00:02<00:00, 28.99it/s]")
		}
	}
	capTook := e.sleepFrac(0.25)
	if phase == "capture" {
		return fail()
	}
	if !e.eager {
		switch {
		case sgl:
			l.info("", fmt.Sprintf("Capture cuda graph end. Time elapsed: %.2f s. mem usage=%s GB. avail mem=%s GB.",
				capTook.Seconds(), gibf(graphs), gibf(float64(r.FreeBytes)-weights-kvBudget-graphs)))
		case e.v016():
			l.info("gpu_model_runner.py:4466", fmt.Sprintf("Graph capturing finished in %d secs, took %s GiB", int(capTook.Seconds()+0.5), gibf(graphs)))
		default:
			l.info("gpu_model_runner.py:1686", fmt.Sprintf("Graph capturing finished in %d secs, took %s GiB", int(capTook.Seconds()+0.5), gibf(graphs)))
		}
	}
	switch {
	case sgl:
		l.info("", fmt.Sprintf("max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=16384, max_running_requests=%d, context_len=%d, available_gpu_mem=%s GB",
			tokens, e.mbt, e.maxNumSeqs, e.maxLen, gibf(float64(r.FreeBytes)-weights-kvBudget-graphs)))
	case e.v016():
		l.info("core.py:272", fmt.Sprintf("init engine (profile, create kv cache, warmup model) took %.2f seconds", time.Since(start).Seconds()))
	default:
		l.info("core.py:159", fmt.Sprintf("init engine (profile, create kv cache, warmup model) took %.2f seconds", time.Since(start).Seconds()))
	}
	return true
}

func (e *engineRun) isMLA() bool {
	return e.info != nil && e.info.Config != nil && e.info.Config.KVLoraRank > 0
}

// engineConfigLine is vLLM's "Initializing a V1 LLM engine ... with config:" line.
func (e *engineRun) engineConfigLine(engine string) string {
	return fmt.Sprintf("Initializing a %s LLM engine (v%s) with config: model=%s, speculative_config=None, tokenizer=%s, "+
		"skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, trust_remote_code=%s, dtype=torch.bfloat16, "+
		"max_seq_len=%d, download_dir=None, load_format=auto, tensor_parallel_size=%d, pipeline_parallel_size=%d, "+
		"data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=%s, kv_cache_dtype=%s, "+
		"device_config=cuda, seed=0, served_model_name=%s, enable_prefix_caching=True, enable_chunked_prefill=True",
		engine, e.version, pyStrRepr(e.modelPath), pyStrRepr(e.modelPath), pyBool(e.args.Bool("trust_remote_code")),
		e.maxLen, e.tp, e.pp, pyBool(e.eager), e.kvDtype, e.served[0])
}

// logWorkerError writes the failure as the worker process reports it.
func (e *engineRun) logWorkerError(l *logger) {
	frames, exc := e.workerError(e.failure)
	if e.kind == KindSGLang {
		tb := traceback(append([]string{}, frames...), exc)
		l.level(l.err, "ERROR", "", "Scheduler hit an exception: "+tb[0])
		l.raw(tb[1:]...)
		return
	}
	v := vllmSite
	outer := []string{v + "v1/engine/core.py:857:run_engine_core:engine_core = EngineCoreProc(*args, **kwargs)",
		v + "v1/engine/core.py:637:__init__:super().__init__("}
	if workerPhase(e.failure.class) == "profile" || workerPhase(e.failure.class) == "capture" {
		outer = append(outer, v+"v1/engine/core.py:111:__init__:num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(")
	} else {
		outer = append(outer, v+"v1/engine/core.py:102:__init__:self.model_executor = executor_class(vllm_config)")
	}
	all := append(outer, frames...)
	if e.v0 {
		l.raw(traceback(all, exc)...)
		return
	}
	src := "core.py:866"
	name := "EngineCore_DP0"
	if !e.v016() {
		src, name = "core.py:396", "EngineCore_0"
	}
	l.errorLines(src, "EngineCore failed to start.")
	l.errorLines(src, traceback(all, exc)...)
	l.raw("Process " + name + ":")
	l.raw(traceback(append([]string{"/usr/lib/python3.12/multiprocessing/process.py:314:_bootstrap:self.run()",
		"/usr/lib/python3.12/multiprocessing/process.py:108:run:self._target(*self._args, **self._kwargs)"}, all...), exc)...)
}

// logStartFailed is the main process's answer to a worker that died while starting.
func (e *engineRun) logStartFailed(l *logger) {
	if e.kind == KindSGLang {
		l.level(l.err, "ERROR", "", "Received sigquit from a child process. It usually means the child failed.")
		return
	}
	v := vllmSite
	frames := []string{"/usr/local/bin/vllm:10:<module>:sys.exit(main())",
		v + "entrypoints/cli/main.py:73:main:args.dispatch_function(args)",
		v + "entrypoints/cli/serve.py:60:cmd:uvloop.run(run_server(args))",
		v + "entrypoints/openai/api_server.py:1950:run_server_worker:async with build_async_engine_client(",
		v + "entrypoints/openai/api_server.py:202:build_async_engine_client_from_engine_args:async_llm = AsyncLLM.from_vllm_config(",
		v + "v1/engine/async_llm.py:134:__init__:self.engine_core = EngineCoreClient.make_async_mp_client(",
		v + "v1/engine/core_client.py:479:__init__:with launch_core_engines(vllm_config, executor_class, log_stats) as (",
		v + "v1/engine/utils.py:921:launch_core_engines:wait_for_engine_startup(",
		v + "v1/engine/utils.py:980:wait_for_engine_startup:raise RuntimeError("}
	exc := "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}"
	switch {
	case e.v0:
		exc = "RuntimeError: Engine process failed to start. See stacktrace for the root cause."
	case !e.v016():
		exc = "RuntimeError: Engine core initialization failed. See root cause above."
	}
	l.raw(traceback(frames, exc)...)
}

// logServing writes the lines of a server that starts answering.
func (e *engineRun) logServing(l *logger) {
	pid := os.Getpid()
	if e.kind == KindSGLang {
		l.uvicorn("INFO", fmt.Sprintf("Started server process [%d]", pid))
		l.uvicorn("INFO", "Waiting for application startup.")
		l.uvicorn("INFO", "Application startup complete.")
		l.uvicorn("INFO", fmt.Sprintf("Uvicorn running on http://%s (Press CTRL+C to quit)", e.addr()))
		return
	}
	url := "http://" + e.addr()
	if e.v016() {
		l.info("api_server.py:1912", "Starting vLLM API server 0 on "+url)
	} else {
		l.info("api_server.py:1081", "Starting vLLM API server on "+url)
	}
	l.info("launcher.py:37", "Available routes are:")
	for _, r := range []string{"/health, Methods: GET", "/tokenize, Methods: POST", "/detokenize, Methods: POST",
		"/v1/models, Methods: GET", "/version, Methods: GET", "/v1/chat/completions, Methods: POST",
		"/v1/completions, Methods: POST", "/metrics, Methods: GET"} {
		l.info("launcher.py:45", "Route: "+r)
	}
	l.uvicorn("INFO", fmt.Sprintf("Started server process [%d]", pid))
	l.uvicorn("INFO", "Waiting for application startup.")
	l.uvicorn("INFO", "Application startup complete.")
}

func (e *engineRun) logShutdown(l *logger) {
	if e.kind == KindVLLM {
		l.info("launcher.py:110", "Shutting down FastAPI HTTP server.")
	}
	l.uvicorn("INFO", "Shutting down")
	l.uvicorn("INFO", "Waiting for application shutdown.")
}

// logCrash is the worker dying while serving (crash_after).
func (e *engineRun) logCrash(l *logger) {
	exc := "RuntimeError: CUDA error: an illegal memory access was encountered\n" +
		"CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n" +
		"For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n" +
		"Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
	if e.kind == KindSGLang {
		tb := traceback([]string{sglangSite + "srt/managers/scheduler.py:2668:run_scheduler_process:scheduler.event_loop_overlap()",
			sglangSite + "srt/managers/scheduler.py:1020:event_loop_overlap:batch_result = self.run_batch(batch)"}, exc)
		l.level(l.err, "ERROR", "", "Scheduler hit an exception: "+tb[0])
		l.raw(tb[1:]...)
		return
	}
	v := vllmSite
	tb := traceback([]string{v + "v1/engine/core.py:937:run_engine_core:engine_core.run_busy_loop()",
		v + "v1/engine/core.py:964:run_busy_loop:self._process_engine_step()",
		v + "v1/engine/core.py:1001:_process_engine_step:outputs, model_executed = self.step_fn()",
		v + "v1/worker/gpu_model_runner.py:2890:execute_model:model_output = self._model_forward("}, exc)
	l.errorLines("core.py:946", "EngineCore encountered a fatal error.")
	l.errorLines("core.py:946", tb...)
}

// logWorkerDied is the main process noticing that the worker is gone.
func (e *engineRun) logWorkerDied(l *logger) {
	if e.kind == KindSGLang {
		l.level(l.err, "ERROR", "", "Received sigquit from a child process. It usually means the child failed.")
		return
	}
	l.errorLines("core_client.py:564", "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.")
	l.errorLines("async_llm.py:525", "AsyncLLM output_handler failed.")
	l.errorLines("async_llm.py:525", traceback([]string{vllmSite + "v1/engine/async_llm.py:477:output_handler:outputs = await engine_core.get_output_async()",
		vllmSite + "v1/engine/core_client.py:892:get_output_async:raise self._format_exception(outputs) from None"},
		"vllm.v1.engine.exceptions.EngineDeadError: "+engineDeadMessage)...)
}

// statsInterval is how often the engine logs its throughput line: 10 s, or
// vLLM's VLLM_LOG_STATS_INTERVAL (seconds).
func (e *engineRun) statsInterval() time.Duration {
	if e.kind == KindVLLM {
		if f, err := strconv.ParseFloat(e.getenv("VLLM_LOG_STATS_INTERVAL"), 64); err == nil && f > 0 {
			return time.Duration(f * float64(time.Second))
		}
	}
	return 10 * time.Second
}

// logStats writes the engine's periodic throughput line while requests
// come in: vLLM's "Avg prompt throughput: ..." (every 10 s, only when
// something happened), SGLang's "Decode batch. ...". It returns a stop function.
func (e *engineRun) logStats(l *logger, h *Handler) (stop func()) {
	t := time.NewTicker(e.statsInterval())
	done := make(chan struct{})
	go func() {
		prev, last := h.Stats(), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				s := h.Stats()
				dt := now.Sub(last).Seconds()
				if s == prev && s.Running == 0 {
					continue
				}
				pt := float64(s.PromptTokens-prev.PromptTokens) / dt
				gt := float64(s.GenerationTokens-prev.GenerationTokens) / dt
				prev, last = s, now
				switch {
				case e.kind == KindSGLang:
					l.info("", fmt.Sprintf("Decode batch. #running-req: %d, #token: %d, token usage: %.2f, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: %d, ",
						s.Running, int64(s.KVUsage*float64(max(h.opts.KVTokens, 0))), s.KVUsage, gt, s.Waiting))
				case e.v016():
					l.info("loggers.py:257", fmt.Sprintf("Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: 0.0%%",
						pt, gt, s.Running, s.Waiting, 100*s.KVUsage))
				default:
					l.info("loggers.py:111", fmt.Sprintf("Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: 0.0%%",
						pt, gt, s.Running, s.Waiting, 100*s.KVUsage))
				}
			}
		}
	}()
	return func() {
		t.Stop()
		close(done)
	}
}
