# A fleet on one 8-GPU host, the Terraform way: one server per GPU with
# for_each, the shared definition in a local module, per-host values in
# variables (roofline.rfvars, ROOFLINE_VAR_*, -var) and the endpoints as
# outputs for a gateway (roofline output -json). Addresses are
# module.llama.server.gpu["gpu3"]. See docs/language.md.

roofline {
  required_version = ">= 0.1.0"
}

variable "gpus" {
  type        = list(number)
  default     = [0, 1, 2, 3, 4, 5, 6, 7]
  description = "One Llama 3.1 8B per GPU."
}

variable "api_key" {
  type      = string
  sensitive = true
  default   = null
}

module "llama" {
  source   = "./modules/llama"
  for_gpus = var.gpus
  api_key  = var.api_key
}

output "routes" {
  description = "base_url per server, for the gateway."
  value       = module.llama.routes
}
