#!/busybox sh
# `vllm ARGS` or `python3 ARGS` inside the image: what roofline runs in
# place of the entrypoint (vllm serve ..., python3 -m sglang.launch_server
# ..., and the probes' --version and -c "import sglang; ...").
exec /roofline rehearsal "$ROOFLINE_REHEARSAL_ENGINE" "$@"
