variable "vllm_version" {
  type        = string
  default     = "0.16.0"
  description = "The vLLM version every server runs."
}

variable "gpus" {
  type    = list(number)
  default = [0, 1]
}

locals {
  context  = 32768
  tp       = local.length_of_gpus
  base_env = { VLLM_LOGGING_LEVEL = "INFO" }
}

locals {
  length_of_gpus = 2
  served         = "qwen3-${var.vllm_version}"
}

engine "vllm" {
  kind      = "vllm"
  version   = var.vllm_version
  rehearsal = true
  env       = local.base_env
}

model "m" {
  path        = "models/qwen3"
  served_name = local.served
}

server "s" {
  engine          = engine.vllm
  model           = model.m
  gpus            = var.gpus
  port            = 8000
  tensor_parallel = local.tp
  max_model_len   = local.context
}
