# TP 8 × PP 2 over two nodes of 8 GPUs: a LeaderWorkerSet of size 2, for
# vLLM (multiprocess mode) and SGLang. The model is on every node's disk.
cluster "lab" {
  model_volume {
    host_path = "/srv/models"
  }
}

engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  image   = "vllm/vllm-openai@sha256:1111111111111111111111111111111111111111111111111111111111111111"
}

engine "sglang" {
  kind    = "sglang"
  version = "0.5.6.post2"
  image   = "lmsysorg/sglang@sha256:2222222222222222222222222222222222222222222222222222222222222222"
}

model "llama" {
  path = "/srv/models/llama-3.1-405b-fp8"
}

server "big_vllm" {
  cluster           = cluster.lab
  engine            = engine.vllm
  model             = model.llama
  port              = 8000
  nodes             = 2
  tensor_parallel   = 8
  pipeline_parallel = 2
  max_model_len     = 16384
}

server "big_sglang" {
  cluster           = cluster.lab
  engine            = engine.sglang
  model             = model.llama
  port              = 30000
  nodes             = 2
  tensor_parallel   = 8
  pipeline_parallel = 2
}
