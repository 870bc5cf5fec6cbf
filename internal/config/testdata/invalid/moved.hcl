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

moved {
  from = server.gamma # ERROR: Moved object still exists
  to   = server.delta
}

moved {
  from = server.a
  to   = server.a # ERROR: Redundant move
}

moved {
  from = "server.b" # ERROR: Invalid address
  to   = server.gamma
}

moved {
  from = server.c
  to   = server.gamma
}

moved {
  from = server.d
  to   = server.gamma # ERROR: Ambiguous move
}

moved { # ERROR: Missing required argument
  from = server.e
}

moved {
  from = engine.e # ERROR: Invalid address
  to   = server.gamma
}
