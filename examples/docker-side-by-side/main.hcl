# The same model on two official vLLM images side by side: the old engine
# keeps serving on GPU 0 while the new one starts on GPU 1 and passes its
# gates; then delete the old server block and apply again (docs/docker.md).
#
# Images are pinned by digest, never by tag, and must already be on this
# host: roofline never pulls, so plan fails with the way to load an image
# that is missing. The digests below are placeholders: put those of your
# images (`docker images --digests`, or after `docker load` the image id
# from `docker images --no-trunc`).

engine "vllm_085" {
  kind    = "vllm"
  version = "0.8.5"
  image   = "vllm/vllm-openai@sha256:0000000000000000000000000000000000000000000000000000000000000085"
}

engine "vllm_016" {
  kind    = "vllm"
  version = "0.16.0"
  image   = "vllm/vllm-openai@sha256:0000000000000000000000000000000000000000000000000000000000000016"
  env     = { VLLM_ATTENTION_BACKEND = "FLASHINFER" }
}

model "qwen3_8b" {
  path        = "/models/Qwen3-8B"
  served_name = "qwen3-8b"
}

server "qwen3_old" {
  engine           = engine.vllm_085
  model            = model.qwen3_8b
  gpus             = [0]
  port             = 8000
  max_model_len    = 32768
  tool_call_parser = "hermes"
}

server "qwen3_new" {
  engine           = engine.vllm_016
  model            = model.qwen3_8b
  gpus             = [1]
  port             = 8001
  max_model_len    = 32768
  tool_call_parser = "hermes"
  reasoning_parser = "qwen3"

  gate {
    smoke_toolcall = true
    bench {
      concurrency                  = 16
      requests                     = 160
      input_tokens                 = 1024
      output_tokens                = 128
      min_output_tokens_per_second = 1200
    }
  }
}
