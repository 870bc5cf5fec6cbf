# A value of the wrong type is one error, on its own line: nothing that
# depends on it (parallelism against the GPU list) is reported again.
engine "e" {
  kind      = "vllm"
  version   = [0, 16] # ERROR: Incorrect attribute value type
  rehearsal = "yes please" # ERROR: Incorrect attribute value type
}

model "m" {
  path = ["/models/x"] # ERROR: Incorrect attribute value type
}

server "a" {
  engine                 = engine.e
  model                  = model.m
  gpus                   = [0, 1]
  port                   = "eighty" # ERROR: Incorrect attribute value type
  tensor_parallel        = "two" # ERROR: Incorrect attribute value type
  pipeline_parallel      = "one" # ERROR: Incorrect attribute value type
  max_model_len          = "long" # ERROR: Invalid token count
  gpu_memory_utilization = "most" # ERROR: Incorrect attribute value type
  concurrency            = "8 please" # ERROR: Incorrect attribute value type
  enforce_eager          = "no" # ERROR: Incorrect attribute value type
  api_key                = ["k1", "k2"] # ERROR: Incorrect attribute value type
}
