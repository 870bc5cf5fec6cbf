roofline {
  state_dir = ".state"
  inventory = "gpus.json"
}

engine "vllm_016" {
  kind    = "vllm"
  version = "0.16.0"
  command = ["/opt/vllm/bin/vllm"]
  env     = { VLLM_ATTENTION_BACKEND = "FLASHINFER" }
}

engine "sglang" {
  kind    = "sglang"
  version = "0.5.6.post2"
  image   = "lmsysorg/sglang@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}

model "qwen" {
  path        = "/models/Qwen3-8B"
  served_name = "qwen3-8b"
  checksums   = "/models/Qwen3-8B.sha256"
}

server "a" {
  engine                 = engine.vllm_016
  model                  = model.qwen
  gpus                   = [0, 1, 2, 3]
  port                   = 8000
  host                   = "0.0.0.0"
  tensor_parallel        = 2
  pipeline_parallel      = 2
  max_model_len          = "32K"
  gpu_memory_utilization = 0.9
  concurrency            = 16
  tool_call_parser       = "hermes"
  reasoning_parser       = "qwen3"
  kv_cache_dtype         = "fp8"
  max_num_seqs           = 256
  max_num_batched_tokens = 8192
  enforce_eager          = false
  enable_prefix_caching  = true
  speculative_config     = { method = "ngram", num_speculative_tokens = 3 }
  extra_args             = ["--max-num-seqs", "256", "--seed=1"]
  env                    = { VLLM_LOGGING_LEVEL = upper("debug") }

  gate {
    health_timeout = "20m"
    smoke_toolcall = true
    bench {
      concurrency                  = 16
      requests                     = 200
      input_tokens                 = 1024
      output_tokens                = 256
      min_output_tokens_per_second = 1500
      min_requests_per_second      = 2
      max_ttft_p99                 = "2s"
      max_tpot_p99                 = "50ms"
      max_itl_p99                  = "80ms"
      max_failed_requests          = 1
    }
  }
  lifecycle {
    create_before_destroy = true
  }
}

server "b" {
  engine = engine.sglang
  model  = model.qwen
  gpus   = [4]
  port   = 30000
  gate {
    bench {
      request_rate = 4.5
      requests     = 50
    }
  }
}
