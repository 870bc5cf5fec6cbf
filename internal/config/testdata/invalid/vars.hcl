variable "port" { # ERROR: No value for required variable
  type = number
}

variable "ratio" {
  type    = number
  default = "lots" # ERROR: Invalid default value for variable
}

variable "port" { # ERROR: Duplicate variable block
}

locals {
  a = local.b # ERROR: Cycle in local values
  b = local.a
}

locals {
  a = 1 # ERROR: Duplicate local value
}
