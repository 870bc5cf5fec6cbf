#!/usr/bin/env bash
# Prepares a real Docker daemon for roofline's docker tests (docs/docker.md):
# installs Docker, a registry and a static busybox from Debian's packages,
# starts dockerd (its own data root, /var/run/docker.sock) unless one already
# answers there, starts a registry on 127.0.0.1, builds the rehearsal engine
# images from this checkout, pushes them to give them real repo@sha256
# digests, and writes their references to $ROOT/images.env, which the tests
# read (ROOFLINE_DOCKER_TEST_IMAGES). Idempotent: run it again after a code
# change to rebuild the images. Undo with .ci/docker-teardown.sh.
#
# No internet is needed beyond the Debian mirror: nothing is pulled.
# --gpus needs the NVIDIA runtime hook; where none is installed, dockerd
# gets a stub (it reads the OCI state and exits 0), so device requests work
# without GPUs.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT=${ROOFLINE_DOCKER_ROOT:-/tmp/roofline-docker}
PORT=${ROOFLINE_DOCKER_REGISTRY_PORT:-5000}
REGISTRY=127.0.0.1:$PORT
SOCK=/var/run/docker.sock

if [ "$(id -u)" != 0 ]; then
  echo "docker-setup: run as root (sudo .ci/docker-setup.sh): it installs packages and starts dockerd" >&2
  exit 1
fi
mkdir -p "$ROOT"

echo "== docker: packages"
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v docker-registry >/dev/null || need+=(docker-registry)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

echo "== docker: daemon"
if docker -H "unix://$SOCK" version >/dev/null 2>&1; then
  echo "a daemon already answers on $SOCK; using it"
else
  mkdir -p "$ROOT/bin"
  if ! command -v nvidia-container-runtime-hook >/dev/null; then
    # The stub stands in for the NVIDIA hook that --gpus runs at container
    # creation: it reads the container state on stdin and succeeds.
    printf '#!/bin/sh\ncat >/dev/null\nexit 0\n' >"$ROOT/bin/nvidia-container-runtime-hook"
    chmod +x "$ROOT/bin/nvidia-container-runtime-hook"
  fi
  PATH="$ROOT/bin:$PATH" setsid dockerd --data-root "$ROOT/data" --exec-root "$ROOT/exec" \
    --pidfile "$ROOT/dockerd.pid" -H "unix://$SOCK" >"$ROOT/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    docker -H "unix://$SOCK" version >/dev/null 2>&1 && break
    sleep 0.5
  done
  if ! docker -H "unix://$SOCK" version >/dev/null 2>&1; then
    echo "docker-setup: dockerd did not come up; the end of $ROOT/dockerd.log:" >&2
    tail -20 "$ROOT/dockerd.log" >&2
    exit 1
  fi
  touch "$ROOT/dockerd.ours"
fi
export DOCKER_HOST=unix://$SOCK

echo "== docker: registry on $REGISTRY"
if ! curl -fsS "http://$REGISTRY/v2/" >/dev/null 2>&1; then
  cat >"$ROOT/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $ROOT/registry
http:
  addr: $REGISTRY
EOF
  setsid docker-registry serve "$ROOT/registry.yml" >"$ROOT/registry.log" 2>&1 </dev/null &
  echo $! >"$ROOT/registry.pid"
  for _ in $(seq 1 40); do
    curl -fsS "http://$REGISTRY/v2/" >/dev/null 2>&1 && break
    sleep 0.25
  done
  curl -fsS "http://$REGISTRY/v2/" >/dev/null || { echo "docker-setup: the registry did not come up:" >&2; cat "$ROOT/registry.log" >&2; exit 1; }
fi

echo "== docker: rehearsal engine images"
ctx=$ROOT/context
rm -rf "$ctx"
mkdir -p "$ctx"
CGO_ENABLED=0 go build -o "$ctx/roofline" ./cmd/roofline
cp /bin/busybox "$ctx/busybox"
cp build/rehearsal-image/Dockerfile build/rehearsal-image/engine.sh build/rehearsal-image/entrypoint.sh "$ctx/"
chmod +x "$ctx/engine.sh" "$ctx/entrypoint.sh"

# build ENGINE TAG [EXTRA BUILD ARGS...] pushes the image and prints its
# digest reference.
build() {
  local engine=$1 tag=$2
  shift 2
  if ! DOCKER_BUILDKIT=0 docker build -q --build-arg "ENGINE=$engine" "$@" -t "$REGISTRY/roofline-rehearsal:$tag" "$ctx" >"$ROOT/build.log" 2>&1; then
    echo "docker-setup: building the $engine image failed:" >&2
    cat "$ROOT/build.log" >&2
    exit 1
  fi
  local digest
  digest=$(docker push "$REGISTRY/roofline-rehearsal:$tag" | sed -n 's/.*digest: \(sha256:[0-9a-f]\{64\}\).*/\1/p')
  [ -n "$digest" ] || { echo "docker-setup: pushing $tag printed no digest" >&2; exit 1; }
  echo "$REGISTRY/roofline-rehearsal@$digest"
}

out=$ROOT/images.env.tmp
{
  echo "# written by .ci/docker-setup.sh; read by internal/e2e/docker_test.go and internal/driver/docker"
  echo "VLLM_0_16_0=$(build vllm@0.16.0 vllm-0.16.0)"
  echo "VLLM_0_8_5=$(build vllm@0.8.5 vllm-0.8.5)"
  echo "SGLANG_0_5_6_POST2=$(build sglang@0.5.6.post2 sglang-0.5.6.post2)"
  # An image the registry has and this host does not: plan must refuse it
  # without pulling.
  absent=$(build vllm@0.16.0 absent --label roofline.test=absent)
  docker rmi "$REGISTRY/roofline-rehearsal:absent" >/dev/null
  if docker image inspect "$absent" >/dev/null 2>&1; then
    echo "docker-setup: $absent is still on this host after docker rmi" >&2
    exit 1
  fi
  echo "ABSENT=$absent"
} >"$out"
mv "$out" "$ROOT/images.env"
cat "$ROOT/images.env"
echo "docker-setup: ready. Tests read ROOFLINE_DOCKER_TEST_IMAGES=$ROOT/images.env (the default)."
