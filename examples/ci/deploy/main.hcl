# The configuration of the GPU host gpu-01, as a pull request changes it.
# host.json is the host's snapshot (roofline snapshot -out=host.json -host=gpu-01,
# run there by a timer and committed); roofline.lock.hcl its engine lock
# (roofline init). CI plans this directory against them: see ../README.md.
#
# The servers are examples/rehearsal's: the same model on two vLLM versions
# side by side, and an MoE model on SGLang with tensor parallel 2.

roofline {
  state_dir = ".roofline"
  inventory = "gpus.json"
}

engine "vllm_085" {
  kind      = "vllm"
  version   = "0.8.5"
  rehearsal = true
}

engine "vllm_016" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

engine "sglang_056" {
  kind      = "sglang"
  version   = "0.5.6.post2"
  rehearsal = true
}

model "qwen3_8b" {
  path        = "models/qwen3-8b"
  served_name = "qwen3-8b"
}

model "qwen3_moe" {
  path        = "models/qwen3-30b-a3b"
  served_name = "qwen3-30b-a3b"
}

server "qwen3_old" {
  engine                 = engine.vllm_085
  model                  = model.qwen3_8b
  gpus                   = [0]
  port                   = 18000
  max_model_len          = 32768
  gpu_memory_utilization = 0.90
  tool_call_parser       = "hermes"
}

# Half of GPU 1, so that a rollout of this server (change max_model_len and
# apply again) starts the new instance beside the old one on the same GPU.
# roofline's proxy listens on host:port; the engines behind it listen on
# 127.0.0.1 only, on ports from the roofline block's backend_ports.
server "qwen3_new" {
  engine                 = engine.vllm_016
  model                  = model.qwen3_8b
  gpus                   = [1]
  host                   = "127.0.0.1"
  port                   = 18001
  max_model_len          = 32768
  gpu_memory_utilization = 0.45
  concurrency            = 3
  tool_call_parser       = "hermes"
  reasoning_parser       = "qwen3"

  gate {
    health_timeout = "2m"
    smoke_toolcall = true
    bench {
      concurrency                  = 16
      requests                     = 64
      input_tokens                 = 512
      output_tokens                = 64
      min_output_tokens_per_second = 200
      max_ttft_p99                 = "2s"
    }
  }

  lifecycle {
    create_before_destroy = true
  }
}

server "moe" {
  engine                 = engine.sglang_056
  model                  = model.qwen3_moe
  gpus                   = [2, 3]
  port                   = 18002
  tensor_parallel        = 2
  max_model_len          = 32768
  gpu_memory_utilization = 0.85
  concurrency            = 16
  tool_call_parser       = "qwen25"
  reasoning_parser       = "qwen3"

  gate {
    health_timeout = "2m"
    smoke_toolcall = true
  }
}
