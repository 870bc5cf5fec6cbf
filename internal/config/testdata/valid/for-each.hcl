variable "gpus" {
  type    = list(number)
  default = [0, 1, 2, 3]
}

variable "gated" {
  type    = bool
  default = true
}

engine "vllm" {
  for_each  = toset(["0.8.5", "0.16.0"])
  kind      = "vllm"
  version   = each.key
  rehearsal = true
}

model "qwen" {
  count       = 2
  path        = "/models/qwen-${count.index}"
  served_name = "qwen-${count.index}"
}

server "web" {
  for_each = { for g in var.gpus : "gpu${g}" => g }
  engine   = engine.vllm["0.16.0"]
  model    = model.qwen[each.value % 2]
  gpus     = [each.value]
  port     = 8000 + each.value

  dynamic "gate" {
    for_each = var.gated ? [1] : []
    content {
      smoke_toolcall = true
      dynamic "bench" {
        for_each = each.value == 0 ? [200] : []
        content {
          requests = bench.value
        }
      }
    }
  }
}

server "old" {
  count  = 1
  engine = engine.vllm["0.8.5"]
  model  = model.qwen[0]
  gpus   = [4]
  port   = 9000
}
