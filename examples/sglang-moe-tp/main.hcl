# Qwen3-30B-A3B (a mixture of experts) on two GPUs with SGLang, tensor
# parallel 2. SGLang serves /metrics only with --enable-metrics, which roofline
# adds because the gates read it.

engine "sglang_056" {
  kind    = "sglang"
  version = "0.5.6.post2"
  command = ["/opt/sglang-0.5.6/bin/python", "-m", "sglang.launch_server"]
}

model "qwen3_30b_a3b" {
  path        = "/models/Qwen3-30B-A3B"
  served_name = "qwen3-30b-a3b"
}

server "moe" {
  engine          = engine.sglang_056
  model           = model.qwen3_30b_a3b
  gpus            = [0, 1]
  port            = 30000
  tensor_parallel = 2

  max_model_len          = 32768
  gpu_memory_utilization = 0.85 # rendered as --mem-fraction-static
  concurrency            = 32
  tool_call_parser       = "qwen25"
  reasoning_parser       = "qwen3"
  max_num_seqs           = 128 # rendered as --max-running-requests

  gate {
    smoke_toolcall = true
    bench {
      concurrency                  = 32
      requests                     = 256
      min_output_tokens_per_second = 2000
      max_ttft_p99                 = "3s"
    }
  }
}
