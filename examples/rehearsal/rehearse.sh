#!/usr/bin/env bash
# Rehearse a rollout with no GPU: build roofline, synthesize the model folders
# (sparse files: no disk is used for the weights), then validate, plan and
# apply this directory on the rehearsal engine and show the result.
# The servers keep running: try `curl localhost:18001/v1/models`, then
# `roofline -chdir=examples/rehearsal destroy -auto-approve`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="$root/bin/roofline"
# go-nvml's C bindings warn about deprecated NVML calls on a cold build.
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
[ -x "$bin" ] || echo "Building bin/roofline (the first build compiles the NVML bindings: a minute or two)..."
(cd "$root" && go build -o "$bin" ./cmd/roofline)
cd "$here"
[ -f models/qwen3-8b/config.json ] || "$bin" model synth -arch Qwen3_8B models/qwen3-8b
[ -f models/qwen3-30b-a3b/config.json ] || "$bin" model synth -arch Qwen3_30B_A3B models/qwen3-30b-a3b
"$bin" validate
# The plan is saved and applied as it is: shown once, applied exactly.
"$bin" plan -out=.roofline/rehearsal.plan
"$bin" apply .roofline/rehearsal.plan
"$bin" status
echo
r="$bin -chdir=$here"
echo "The servers run on the rehearsal engine. Next:"
echo "  curl -s localhost:18001/v1/models"
echo "  $r smoke qwen3_new"
echo "  $r bench qwen3_new -compare qwen3_old"
echo "  A rollout: change max_model_len of qwen3_new in $here/main.hcl, then"
echo "  $r apply    (the new instance starts beside the old one and takes over once it passes its gates)"
echo "  $r destroy -auto-approve"
