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
  id = "pid:1234"
}

import {
  to = server.qwen3 # ERROR: Duplicate import
  id = "port:8000"
}

import {
  to = server.missing # ERROR: Import to a server not in the configuration
  id = "pid:1"
}

import {
  to = server.qwen3
  id = "container:abc" # ERROR: Invalid import id
}

import {
  to = server.qwen3
  id = "1234" # ERROR: Invalid import id
}
