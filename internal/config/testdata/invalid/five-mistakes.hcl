engine "vllm" {
  kind    = "vlm" # ERROR: Unsupported engine kind
  version = "0.16.0"
  image   = "vllm/vllm-openai:latest" # ERROR: Image not pinned by digest
}

model "m" {
  path = "/models/x"
}

server "a" {
  engine                 = engine.vllm
  model                  = model.mm # ERROR: Reference to undeclared model
  gpus                   = [0]
  port                   = 8000
  gpu_memory_utilisation = 0.9 # ERROR: Unsupported argument
}

server "b" {
  engine = engine.vllm
  model  = model.m
  gpus   = [1]
  port   = 8000 # ERROR: Duplicate port
}
