# The configuration roofline-agent.service keeps running: install it as
# /etc/roofline/main.hcl (docs/agent.md). The state lives in systemd's
# StateDirectory, so the agent, roofline check and apply share it.

roofline {
  state_dir = "/var/lib/roofline"
}

engine "vllm_016" {
  kind    = "vllm"
  version = "0.16.0"
  command = ["/opt/vllm-0.16.0/bin/vllm"]
}

model "qwen3_8b" {
  path        = "/models/Qwen3-8B"
  served_name = "qwen3-8b"
}

server "qwen3" {
  engine = engine.vllm_016
  model  = model.qwen3_8b
  gpus   = [0]
  port   = 8000

  max_model_len          = 32768
  gpu_memory_utilization = 0.90
  tool_call_parser       = "hermes"

  gate {
    health_timeout = "15m"
    smoke_toolcall = true
  }
}
