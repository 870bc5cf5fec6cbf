# One Qwen3-8B server on one GPU with vLLM 0.16.0, with tool calling and a
# benchmark gate. Adjust the paths to your host.

roofline {
  state_dir = ".roofline"
}

engine "vllm_016" {
  kind    = "vllm"
  version = "0.16.0"
  command = ["/opt/vllm-0.16.0/bin/vllm"]
  env = {
    VLLM_ATTENTION_BACKEND = "FLASH_ATTN"
  }
}

model "qwen3_8b" {
  path        = "/models/Qwen3-8B"
  served_name = "qwen3-8b"
  checksums   = "/models/Qwen3-8B.sha256"
}

server "qwen3" {
  engine = engine.vllm_016
  model  = model.qwen3_8b
  gpus   = [0]
  port   = 8000

  max_model_len          = 32768
  gpu_memory_utilization = 0.90
  concurrency            = 8
  tool_call_parser       = "hermes"
  reasoning_parser       = "qwen3"
  extra_args             = ["--max-num-seqs", "256"]

  gate {
    health_timeout = "15m"
    smoke_toolcall = true
    bench {
      concurrency                  = 16
      requests                     = 200
      input_tokens                 = 1024
      output_tokens                = 256
      min_output_tokens_per_second = 1500
      max_ttft_p99                 = "2s"
    }
  }
}
