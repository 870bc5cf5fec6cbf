# A team's shared definition, used twice.
engine "vllm" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

module "chat" {
  source = "./modules/qwen3"
  gpus   = [0, 1]
  port   = 8000
}

module "batch" {
  source   = "./modules/qwen3"
  gpus     = [2, 3]
  port     = 8100
  max_len  = 8192
  api_key  = var.key
}

variable "key" {
  type      = string
  sensitive = true
  default   = "sk-module"
}

output "chat_url" {
  value = module.chat.base_url
}

output "all" {
  value = [module.chat.base_url, module.batch.base_url]
}
