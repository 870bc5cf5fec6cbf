#!/usr/bin/env bash
# Builds the Kubernetes control plane roofline's cluster tests run against
# (docs/kubernetes.md): kube-apiserver, kube-controller-manager,
# kube-scheduler and etcd from the tools/k8s module,
# kwok from its module, all from the Go module proxy, into
# ~/.cache/roofline-k8s/bin (override with ROOFLINE_K8S_CACHE). Skips what is
# already there. Also writes kwok's stages file and finds the LeaderWorkerSet
# CRD folder. About 10 minutes of CPU cold on 2 cores, seconds warm.
#
#   bash .ci/k8s.sh            # build what is missing
#   eval "$(bash .ci/k8s.sh -env)"   # ... and print the exports the tests read
#
# Never commit the binaries: they are over 100 MB.
set -euo pipefail
cd "$(dirname "$0")/.."

K8S_VERSION=v1.37.2
KWOK_VERSION=v0.8.0
LWS_VERSION=v0.7.0
cache=${ROOFLINE_K8S_CACHE:-$HOME/.cache/roofline-k8s}
bin=$cache/bin
mkdir -p "$bin"
log() { echo "k8s.sh: $*" >&2; }

# kube-apiserver, kube-controller-manager, kube-scheduler: the wrapper module
# (tools/k8s/go.mod). The first build takes about 6 minutes cold on 2 cores;
# the other two reuse most of its build cache.
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
  [ -x "$bin/$cmd" ] && continue
  log "building $cmd $K8S_VERSION"
  start=$SECONDS
  (cd tools/k8s && GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w \
    -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
    -X k8s.io/component-base/version.gitMajor=1 \
    -X k8s.io/component-base/version.gitMinor=$minor" \
    -o "$bin/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
  mv "$bin/$cmd.tmp" "$bin/$cmd"
  log "$cmd built in $((SECONDS - start)) s"
done
if [ ! -x "$bin/etcd" ]; then
  log "building etcd (about 1 minute cold)"
  start=$SECONDS
  (cd tools/k8s && GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w" \
    -o "$bin/etcd.tmp" ./cmd/etcd)
  mv "$bin/etcd.tmp" "$bin/etcd"
  log "etcd built in $((SECONDS - start)) s"
fi
if [ ! -x "$bin/kwok" ]; then
  log "building kwok $KWOK_VERSION (about 1 minute cold)"
  start=$SECONDS
  GOFLAGS= GOBIN="$bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  log "kwok built in $((SECONDS - start)) s"
fi

# kwok's stages: fast node initialisation, node heartbeats, pods that become
# Ready (and are deleted), shipped in kwok's module.
stages=$cache/kwok-stages.yaml
if [ ! -s "$stages" ]; then
  kdir=$(GOFLAGS= go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  {
    for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
      pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
      echo "---"; cat "$kdir/kustomize/stage/$f"
    done
  } > "$stages.tmp"
  mv "$stages.tmp" "$stages"
fi

# The LeaderWorkerSet CRD, from the module roofline takes its API types from.
crd=$(GOFLAGS= go mod download -json "sigs.k8s.io/lws@$LWS_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')/config/crd/bases

if [ "${1:-}" = -env ]; then
  echo "export KUBEBUILDER_ASSETS=$bin"
  echo "export ROOFLINE_KWOK=$bin/kwok"
  echo "export ROOFLINE_KWOK_STAGES=$stages"
  echo "export ROOFLINE_LWS_CRDS=$crd"
fi
