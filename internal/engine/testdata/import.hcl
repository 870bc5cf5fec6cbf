engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path = "/m"
}

server "qwen3" {
  engine = engine.e
  model  = model.m
  gpus   = [0]
  port   = 8000
}

import {
  to = server.qwen3
  id = "port:8000"
}
