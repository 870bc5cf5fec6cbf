engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path = "/m"
}

server "gamma" {
  engine = engine.e
  model  = model.m
  gpus   = [0]
  port   = 8000
}

server "web" {
  for_each = toset(["a"])
  engine   = engine.e
  model    = model.m
  gpus     = [1]
  port     = 8001
}

moved {
  from = server.beta
  to   = server.gamma
}

moved {
  from = server.web_old[0]
  to   = server.web["a"]
}
