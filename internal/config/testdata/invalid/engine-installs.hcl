engine "none" { # ERROR: Engine has no install
  kind    = "vllm"
  version = "0.16.0"
}

engine "both" { # ERROR: Engine has more than one install
  kind    = "sglang"
  version = "0.5.6.post2"
  command = ["python", "-m", "sglang.launch_server"]
  image   = "lmsysorg/sglang@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}

engine "short_digest" {
  kind    = "vllm"
  version = "0.16.0"
  image   = "vllm/vllm-openai@sha256:abc" # ERROR: Image not pinned by digest
}

engine "empty" {
  kind    = "vllm"
  version = "" # ERROR: Empty engine version
  command = [] # ERROR: Empty command
}

engine "nokind" { # ERROR: Missing required argument
  version   = "1"
  rehearsal = true
}
