variable "token" {
  type      = string
  sensitive = true
  default   = "sk-output"
}

output "leak" {
  value = "Bearer ${var.token}" # ERROR: Output refers to sensitive values
}

output "nope" {
  value = server.missing.url # ERROR: Unsupported attribute
}

output "novalue" { # ERROR: Missing required argument
  description = "x"
}
