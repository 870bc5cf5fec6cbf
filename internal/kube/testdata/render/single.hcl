# One node: a Deployment of two replicas and a Service. The model comes
# from a PersistentVolumeClaim; create_before_destroy surges.
cluster "lab" {
  namespace = "inference"
  shm_size  = "16Gi"
  toleration {
    key      = "nvidia.com/gpu"
    operator = "Exists"
    effect   = "NoSchedule"
  }
  node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
  model_volume {
    claim      = "models"
    mount_path = "/models"
  }
}

engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  image   = "vllm/vllm-openai@sha256:1111111111111111111111111111111111111111111111111111111111111111"
}

model "qwen" {
  path        = "/models/qwen3-8b"
  served_name = "qwen3-8b"
}

server "qwen_chat" {
  cluster         = cluster.lab
  engine          = engine.vllm
  model           = model.qwen
  port            = 8000
  replicas        = 2
  tensor_parallel = 2
  max_model_len   = 32768
  env             = { VLLM_LOGGING_LEVEL = "INFO" }
  gate {
    health_timeout = "20m"
  }
  lifecycle {
    create_before_destroy = true
  }
}
