engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path = "models/tiny"
}

server "s" {
  engine = engine.e
  model  = model.m
  gpus   = [0]
  port   = 8000
}
