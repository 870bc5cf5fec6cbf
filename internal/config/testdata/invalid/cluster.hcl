cluster "lab" {
  namespace = "Inference" # ERROR: Invalid namespace
  model_volume { # ERROR: Model volume needs one source
    host_path = "/srv/models"
    claim     = "models"
  }
}

cluster "novolume" {
}

cluster "pvc" {
  model_volume { # ERROR: Model volume needs mount_path
    claim = "models"
  }
}

engine "local" {
  kind    = "vllm"
  version = "0.16.0"
  command = ["vllm"]
}

model "llama" {
  path = "/srv/models/llama"
}

model "elsewhere" {
  path = "/data/llama"
}

server "on_host" { # ERROR: Missing required argument
  engine   = engine.local
  model    = model.llama
  port     = 8000
  replicas = 2 # ERROR: Only on a cluster
}

server "gpus_too" {
  cluster = cluster.lab
  engine  = engine.local # ERROR: Cluster servers need an image engine
  model   = model.elsewhere # ERROR: Model outside the model volume
  port    = 8001
  gpus    = [0] # ERROR: GPUs on a cluster server
  nodes   = 3 # ERROR: Ranks do not divide over the nodes
  tensor_parallel = 8
}

server "Upper" { # ERROR: Server name unusable on a cluster
  cluster  = cluster.lab
  engine   = engine.local # ERROR: Cluster servers need an image engine
  model    = model.llama
  port     = 8002
  replicas = 0 # ERROR: Invalid replicas
}

server "no_vol" {
  cluster = cluster.novolume # ERROR: Cluster has no model_volume
  engine  = engine.local # ERROR: Cluster servers need an image engine
  model   = model.llama
  port    = 8003
}

server "unknown" {
  cluster = cluster.lap # ERROR: Reference to undeclared cluster
  engine  = engine.local
  model   = model.llama
  port    = 8004
}
