engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path = "/models/m"
}

server "s" {
  engine                 = engine.e
  model                  = model.m
  gpus                   = [0]
  port                   = 8000
  gpu_memory_utilization = 0.97 # WARNING: gpu_memory_utilization above 0.95
  gate {
    bench {
      concurrency = 64 # WARNING: Bench concurrency above requests
      requests    = 10
    }
  }
}
