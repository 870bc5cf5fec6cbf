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
    max_body        = "128MiB"
    max_buffered    = 1073741824
    max_connections = 10000
    header_timeout  = "5s"
    body_timeout    = "2m"
    idle_timeout    = "30s"
  }
}
