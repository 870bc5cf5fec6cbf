#!/busybox sh
# `docker run IMAGE ARGS` as with the official images: vllm/vllm-openai
# runs `vllm serve ARGS`, and for SGLang ARGS go to sglang.launch_server.
case "$ROOFLINE_REHEARSAL_ENGINE" in
vllm@*) exec /roofline rehearsal "$ROOFLINE_REHEARSAL_ENGINE" serve "$@" ;;
*) exec /roofline rehearsal "$ROOFLINE_REHEARSAL_ENGINE" -m sglang.launch_server "$@" ;;
esac
