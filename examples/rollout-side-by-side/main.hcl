# The rollout pattern: one model served by two engine versions side by side on
# different GPUs and ports. The old server keeps serving until the new one has
# passed its gates; then delete the old server block and apply again.

engine "vllm_085" {
  kind    = "vllm"
  version = "0.8.5"
  command = ["/opt/vllm-0.8.5/bin/vllm"]
}

engine "vllm_016" {
  kind    = "vllm"
  version = "0.16.0"
  command = ["/opt/vllm-0.16.0/bin/vllm"]
}

model "llama31_8b" {
  path        = "/models/Llama-3.1-8B-Instruct"
  served_name = "llama-3.1-8b"
}

server "llama_old" {
  engine           = engine.vllm_085
  model            = model.llama31_8b
  gpus             = [0]
  port             = 8000
  max_model_len    = 16384
  tool_call_parser = "llama3_json"
}

server "llama_new" {
  engine           = engine.vllm_016
  model            = model.llama31_8b
  gpus             = [1]
  port             = 8001
  max_model_len    = 16384
  tool_call_parser = "llama3_json"

  gate {
    smoke_toolcall = true
    bench {
      concurrency                  = 16
      requests                     = 160
      input_tokens                 = 1024
      output_tokens                = 128
      min_output_tokens_per_second = 1200
      max_ttft_p99                 = "1500ms"
    }
  }

  lifecycle {
    create_before_destroy = true
  }
}
