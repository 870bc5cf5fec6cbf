variable "hf_token" { # ERROR: No value for required variable
  type      = string
  sensitive = true
}

variable "gpus" { # ERROR: No value for required variable
  type = list(number)
}

engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
  env       = { HF_TOKEN = var.hf_token }
}

model "m" {
  path = "/models/m"
}

server "s" {
  engine          = engine.e
  model           = model.m
  gpus            = var.gpus
  tensor_parallel = 2
  port            = 8000
  env             = { TOKEN = "Bearer ${var.hf_token}" }
}
