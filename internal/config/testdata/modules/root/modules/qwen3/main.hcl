# Qwen3-8B on a pair of GPUs with our gate.
variable "gpus" {
  type = list(number)
}

variable "port" {
  type = number
}

variable "max_len" {
  type    = number
  default = 32768
}

variable "api_key" {
  type      = string
  default   = null
  sensitive = true
}

engine "vllm" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "qwen3" {
  path        = "models/qwen3-8b"
  served_name = "qwen3-8b"
}

server "qwen3" {
  engine          = engine.vllm
  model           = model.qwen3
  gpus            = var.gpus
  tensor_parallel = length(var.gpus)
  port            = var.port
  max_model_len   = var.max_len
  env             = var.api_key == null ? {} : { VLLM_API_KEY = var.api_key }

  gate {
    smoke_toolcall = true
  }
}

module "nested" {
  source = "../gate"
  name   = "x"
}

output "base_url" {
  value = server.qwen3.base_url
}
