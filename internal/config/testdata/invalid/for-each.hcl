variable "secret_keys" {
  type      = set(string)
  sensitive = true
  default   = ["a"]
}

engine "e" {
  for_each  = toset(["a", "b"])
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path = "/m"
}

server "list" {
  for_each = [0, 1] # ERROR: Invalid for_each argument
  engine   = engine.e["a"]
  model    = model.m
  gpus     = [0]
  port     = 8000
}

server "both" {
  for_each = toset(["a"])
  count    = 1 # ERROR: Invalid combination of "count" and "for_each"
  engine   = engine.e["a"]
  model    = model.m
  gpus     = [0]
  port     = 8001
}

server "plain_ref" {
  engine = engine.e # ERROR: Reference to a repeated block
  model  = model.m
  gpus   = [1]
  port   = 8002
}

server "negative" {
  count  = -1 # ERROR: Invalid count argument
  engine = engine.e["a"]
  model  = model.m
  gpus   = [2]
  port   = 8003
}

server "secret" {
  for_each = var.secret_keys # ERROR: Invalid for_each argument
  engine   = engine.e["a"]
  model    = model.m
  gpus     = [3]
  port     = 8004
}

server "dup" {
  for_each = toset(["a", "x"])
  engine   = engine.e[each.key] # ERROR: Invalid index
  model    = model.m
  gpus     = [5]
  port     = 8005 # ERROR: Duplicate port
}

server "nokey" {
  engine = engine.e["c"] # ERROR: Invalid index
  model  = model.m
  gpus   = [6]
  port   = 8006
}

server "slash" {
  for_each = toset(["ok", "../../etc"]) # ERROR: Invalid for_each key
  engine   = engine.e["a"]
  model    = model.m
  gpus     = [7]
  port     = 8007
}
