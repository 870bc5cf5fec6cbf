variable "hf_token" {
  type      = string
  sensitive = true
  default   = "hf_defaultsecret"
}

variable "api_keys" {
  type      = list(string)
  sensitive = true
  default   = ["sk-one", "sk-two"]
}

variable "port" {
  type     = number
  default  = 8000
  nullable = false

  validation {
    condition     = var.port >= 8000 && var.port < 8100
    error_message = "Ports 8000-8099 only."
  }

  validation {
    condition     = can(regex("^80", tostring(var.port)))
    error_message = "The port starts with 80."
  }
}

variable "tp" {
  type    = number
  default = 1
  validation {
    condition     = contains([1, 2, 4, 8], var.tp)
    error_message = "tensor_parallel is a power of two up to 8."
  }
}

variable "note" {
  type     = string
  default  = null
  nullable = true
}

engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
  env       = { HF_TOKEN = var.hf_token, PLAIN = "x" }
}

model "m" {
  path = "/models/m"
}

server "s" {
  engine          = engine.e
  model           = model.m
  gpus            = [0]
  port            = var.port
  tensor_parallel = var.tp
  extra_args      = ["--revision", var.api_keys[0], "--seed=1"]
  env             = { TOKEN = upper(var.hf_token) }
}
