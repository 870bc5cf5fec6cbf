roofline {
  required_version = ">= 99.0" # ERROR: Unsupported roofline version
}

variable "gpus" {
  default = [0, 1, 2]
}

engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path = "/m"
}

server "a" {
  engine          = engine.e
  model           = model.m
  gpus            = var.gpus
  port            = 8000
  tensor_parallel = 3

  lifecycle {
    prevent_destroy      = "yes" # ERROR: Incorrect attribute value type
    ignore_changes       = [max_modle_len] # ERROR: Invalid ignore_changes
    replace_triggered_by = [engine.e] # ERROR: Invalid replace_triggered_by

    precondition {
      condition     = length(var.gpus) % 2 == 0 # ERROR: Resource precondition failed
      error_message = "Tensor parallel needs an even number of GPUs."
    }
  }
}
