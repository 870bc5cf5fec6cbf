# Llama 3.1 8B on vLLM 0.16.0, one server per GPU, with the team's gate.

variable "for_gpus" {
  type = list(number)
  validation {
    condition     = length(var.for_gpus) > 0 && length(var.for_gpus) == length(distinct(var.for_gpus))
    error_message = "List each GPU once."
  }
}

variable "api_key" {
  type      = string
  sensitive = true
  default   = null
}

engine "vllm_016" {
  kind    = "vllm"
  version = "0.16.0"
  command = ["/opt/vllm-0.16.0/bin/vllm"]
}

model "llama31_8b" {
  path        = "/models/Llama-3.1-8B-Instruct"
  served_name = "llama-3.1-8b"
}

server "gpu" {
  for_each               = { for g in var.for_gpus : "gpu${g}" => g }
  engine                 = engine.vllm_016
  model                  = model.llama31_8b
  gpus                   = [each.value]
  port                   = 8000 + each.value
  max_model_len          = 16384
  gpu_memory_utilization = 0.9
  tool_call_parser       = "llama3_json"
  env                    = var.api_key == null ? {} : { VLLM_API_KEY = var.api_key }

  gate {
    smoke_toolcall = true
  }

  lifecycle {
    create_before_destroy = true
    ignore_changes        = [model_files]
  }
}

output "routes" {
  value = { for k, s in server.gpu : k => s.base_url }
}
