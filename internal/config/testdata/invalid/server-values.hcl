engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path = "/models/m"
}

server "ports" {
  engine = engine.e
  model  = model.m
  gpus   = [0]
  port   = 70000 # ERROR: Invalid port
}

server "gpus" {
  engine = engine.e
  model  = model.m
  gpus   = [1, 1] # ERROR: Duplicate GPU index
  port   = 8001
}

server "tp" {
  engine          = engine.e
  model           = model.m
  gpus            = [2, 3]
  port            = 8002
  tensor_parallel = 4 # ERROR: Parallelism does not match the GPUs
}

server "values" {
  engine                 = engine.e
  model                  = model.m
  gpus                   = [4]
  port                   = 8003
  gpu_memory_utilization = 1.5 # ERROR: Invalid gpu_memory_utilization
  max_model_len          = 0 # ERROR: Invalid max_model_len
  concurrency            = -1 # ERROR: Invalid concurrency
  extra_args             = ["--max-num-seqs 256"] # ERROR: Invalid extra argument
}

server "refs" {
  engine = engine.ee # ERROR: Reference to undeclared engine
  model  = "m" # ERROR: Invalid reference
  gpus   = [] # ERROR: No GPUs
  port   = 8004
}

server "types" {
  engine        = engine.e
  model         = model.m
  gpus          = [0.5] # ERROR: Invalid GPU index
  port          = "http" # ERROR: Incorrect attribute value type
  max_model_len = "lots" # ERROR: Invalid token count
  enforce_eager = "maybe" # ERROR: Incorrect attribute value type
  env           = { A = var.x } # ERROR: Unsupported attribute
}

server "missing" { # ERROR: Missing required argument
  engine = engine.e
  model  = model.m
  gpus   = [5]
  bogus {} # ERROR: Unsupported block type
}

server "missing" { # ERROR: Duplicate server block
  engine = engine.e
  model  = model.m
  gpus   = [6]
  port   = 8006
}
