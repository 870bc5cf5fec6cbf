engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path = "/m"
}

server "a" {
  engine = engine.e
  model  = model.m
  gpus   = [0]
  port   = 8000

  lifecycle {
    create_before_destroy = true
  }

  proxy {
    max_body        = "64 parsecs" # ERROR: Invalid max_body
    max_buffered    = "512B" # ERROR: Invalid max_buffered
    max_connections = 0 # ERROR: Invalid max_connections
    header_timeout  = "-1s" # ERROR: Invalid header_timeout
    body_timeout    = "soon" # ERROR: Invalid duration
    idle_timeout    = "2m"
    max_bdy         = "1MiB" # ERROR: Unsupported argument
  }

  proxy { # ERROR: Duplicate proxy block
  }
}

server "b" {
  engine = engine.e
  model  = model.m
  gpus   = [1]
  port   = 8001

  lifecycle {
    create_before_destroy = true
  }

  proxy {
    max_body     = "128MiB"
    max_buffered = "64MiB" # ERROR: max_buffered below max_body
  }
}
