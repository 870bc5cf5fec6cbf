engine "e" {
  kind      = "sglang"
  version   = "0.5.6.post2"
  rehearsal = true
}

model "m" {
  path = "/models/m"
}

server "s" {
  engine        = engine.e
  model         = model.m
  gpus          = [0]
  port          = 8000
  max_model_len = 1024
  gate {
    health_timeout = "15 minutes" # ERROR: Invalid duration
    bench {
      requests                     = 10
      input_tokens                 = 1100 # ERROR: Bench requests longer than max_model_len
      output_tokens                = 1
      max_ttft_p99                 = "0s" # ERROR: Threshold that can never pass
      max_tpot_p99                 = "20ms" # ERROR: Threshold that can never pass
      max_failed_requests          = 10 # ERROR: Threshold that cannot fail
      min_output_tokens_per_second = 0 # ERROR: Threshold that cannot fail
    }
  }
  gate { # ERROR: Duplicate gate block
  }
}
