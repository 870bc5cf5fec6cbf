roofline {
  required_version = ">= 0.1.0, < 1.0"
}

variable "gpus" {
  default = [0, 1]
}

engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path = "/m"
}

server "a" {
  engine          = engine.e
  model           = model.m
  gpus            = var.gpus
  port            = 8000
  tensor_parallel = 2

  lifecycle {
    create_before_destroy = true
    prevent_destroy       = true
    ignore_changes        = [max_model_len, env, model_files, engine_install]
    replace_triggered_by  = ["templates/chat.jinja", server.b]

    precondition {
      condition     = length(var.gpus) % 2 == 0
      error_message = "Tensor parallel needs an even number of GPUs."
    }
  }
}

server "b" {
  engine = engine.e
  model  = model.m
  gpus   = [2]
  port   = 8001
  lifecycle {
    ignore_changes = all
  }
}
