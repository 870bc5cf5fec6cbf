cluster "lab" {
  kubeconfig   = "~/.kube/config"
  context      = "gpu-lab"
  namespace    = "inference"
  node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
  shm_size     = "16Gi"
  toleration {
    key      = "nvidia.com/gpu"
    operator = "Exists"
    effect   = "NoSchedule"
  }
  model_volume {
    host_path = "/srv/models"
  }
}

engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  image   = "vllm/vllm-openai@sha256:0000000000000000000000000000000000000000000000000000000000000000"
}

model "llama" {
  path = "/srv/models/llama-70b"
}

server "llama_70b" {
  cluster           = cluster.lab
  engine            = engine.vllm
  model             = model.llama
  port              = 8000
  nodes             = 2
  tensor_parallel   = 8
  pipeline_parallel = 2
}

server "small" {
  cluster  = cluster.lab
  engine   = engine.vllm
  model    = model.llama
  port     = 8000
  replicas = 2
}
