variable "port" {
  type    = number
  default = 9000 # ERROR: Invalid value for variable

  validation {
    condition     = var.port >= 8000 && var.port < 8100
    error_message = "Ports 8000-8099 only."
  }
}

variable "other" {
  type    = number
  default = 1
}

variable "tp" {
  type    = number
  default = 3
  validation {
    condition     = var.tp == var.other # ERROR: Invalid reference in variable validation
    error_message = "x"
  }
}

variable "gpus" {
  default = [0]
  validation {
    condition     = "yes" # ERROR: Invalid variable validation result
    error_message = "x"
  }
}

variable "name" {
  default = "a"
  validation { # ERROR: Missing required argument
    condition = true
  }
}

variable "flag" {
  default   = true
  sensitive = "maybe" # ERROR: Invalid value
}

variable "strict" {
  type     = string
  default  = null # ERROR: Required variable is null
  nullable = false
}
