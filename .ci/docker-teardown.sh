#!/usr/bin/env bash
# Undoes .ci/docker-setup.sh: stops the registry and the dockerd that the
# setup started, with the containers the tests left (a daemon that was
# already running is left alone), and deletes their data unless
# ROOFLINE_DOCKER_KEEP=1. Safe to run twice.
set -uo pipefail

ROOT=${ROOFLINE_DOCKER_ROOT:-/tmp/roofline-docker}
export DOCKER_HOST=unix:///var/run/docker.sock

# stop PIDFILE: SIGTERM to the recorded pid, then SIGKILL after 20 s.
stop() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 80); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -f "$f"
}

stop "$ROOT/registry.pid"
if [ -f "$ROOT/dockerd.ours" ]; then
  # Only on the setup's own daemon: a daemon that was already running may
  # hold containers roofline manages for real.
  ids=$(docker ps -aq --filter label=roofline.managed=true 2>/dev/null)
  if [ -n "$ids" ]; then
    echo "docker-teardown: removing containers the tests left: $(echo $ids)"
    # Which test left each: a probe's throwaway container, or a server's
    # (named by its state directory, which names the test).
    docker ps -a --filter label=roofline.managed=true \
      --format '  {{.ID}} {{.Status}} probe={{.Label "roofline.probe"}} {{.Label "roofline.server"}} {{.Label "roofline.state_dir"}}' 2>/dev/null
    docker rm -f $ids >/dev/null
  fi
  stop "$ROOT/dockerd.pid"
  rm -f "$ROOT/dockerd.ours"
  # A daemon that had to be killed leaves its mounts (overlays, netns).
  awk -v root="$ROOT/" 'index($2, root) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null
  done
fi
if [ "${ROOFLINE_DOCKER_KEEP:-}" != 1 ]; then
  rm -rf "$ROOT/data" "$ROOT/exec" "$ROOT/registry" "$ROOT/context" "$ROOT/images.env"
fi
echo "docker-teardown: done"
