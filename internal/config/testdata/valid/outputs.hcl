variable "token" {
  type      = string
  sensitive = true
  default   = "sk-output"
}

engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path        = "/models/qwen3"
  served_name = "qwen3-8b"
}

server "qwen3" {
  engine = engine.e
  model  = model.m
  gpus   = [0]
  port   = 8000
  env    = { VLLM_API_KEY = var.token }
}

server "web" {
  for_each = toset(["a", "b"])
  engine   = engine.e
  model    = model.m
  gpus     = [each.key == "a" ? 1 : 2]
  port     = each.key == "a" ? 8001 : 8002
  host     = "10.0.0.5"
}

output "qwen3_base_url" {
  value       = server.qwen3.base_url
  description = "What clients use as base_url."
}

output "routes" {
  value = { for k, s in server.web : s.served_model_name => s.url... }
}

output "key_env" {
  value = server.qwen3.api_key_env
}

output "token" {
  value     = var.token
  sensitive = true
}
