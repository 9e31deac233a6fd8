#!/usr/bin/env bash
# Makes a Docker engine and the Nerva test image available, idempotently.
#
#   .ci/docker.sh            install docker.io if dockerd is missing (Debian, needs root), start
#                            dockerd if the engine does not answer, build the test image if missing.
#   .ci/docker.sh --image    only build the test image if missing (fails if no engine answers).
#
# Either way the last line on stdout is the image reference, e.g. nerva-test-node:3f2a9c01d4e5.
# Progress goes to stderr. Quick (well under a second) when everything is already in place.
#
# No image registry is reachable here, so the image is made with `docker import` from a minimal
# root filesystem: this machine's own `node` binary, the shared libraries `ldd` lists, the dynamic
# loader, the Nerva container agent (/nerva/agent.mjs), the stdio test handlers (/handlers) and
# the module test handlers (/modules) and the examples of docs/container-runtime.md (/app). Its
# tag is a hash of those inputs, so editing a handler (or upgrading node) builds a new image on
# the next run; nerva-example-agent:1.0 is an alias of the current build, used by the docs.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE_DIR="$REPO_ROOT/packages/core/src/runtime/container/image"
IMAGE_NAME="${NERVA_TEST_IMAGE_NAME:-nerva-test-node}"
# Stable alias of the same image, used by the examples in docs/container-runtime.md.
EXAMPLE_IMAGE="nerva-example-agent:1.0"
DOCKERD_LOG="${DOCKERD_LOG:-/var/log/dockerd.log}"
WAIT_SECONDS=60

log() { echo "[docker.sh] $*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

engine_up() { docker info >/dev/null 2>&1; }

install_docker() {
  if command -v dockerd >/dev/null 2>&1 && command -v docker >/dev/null 2>&1; then return; fi
  [ "$(id -u)" = 0 ] || die "dockerd is not installed and this is not root: run 'apt-get install -y docker.io' as root."
  command -v apt-get >/dev/null 2>&1 || die "dockerd is not installed and apt-get is missing: install Docker by hand."
  log "installing docker.io (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  # Install first from the cached lists; refresh them only if that fails (saves a network round).
  if ! apt-get install -y -q docker.io >&2; then
    apt-get update -q >&2
    apt-get install -y -q docker.io >&2
  fi
}

start_dockerd() {
  engine_up && return
  [ "$(id -u)" = 0 ] || die "the Docker engine does not answer and this is not root: start dockerd (or ask an admin)."
  # A dockerd may be up but still initialising (its pid file names it); do not start a second one.
  local pid=""
  [ -r /var/run/docker.pid ] && pid="$(cat /var/run/docker.pid 2>/dev/null || true)"
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
    log "starting dockerd (log: $DOCKERD_LOG)"
    # setsid + nohup: the daemon must outlive this script and the CI step that ran it.
    setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
  else
    log "dockerd is running but not answering yet; waiting"
  fi
  local i
  for ((i = 0; i < WAIT_SECONDS * 4; i++)); do
    engine_up && {
      log "Docker engine is up"
      return
    }
    sleep 0.25
  done
  tail -n 30 "$DOCKERD_LOG" >&2 2>/dev/null || true
  die "the Docker engine did not answer within ${WAIT_SECONDS}s (see $DOCKERD_LOG)"
}

# Files that go into the image: node, its libraries and the dynamic loader.
native_files() {
  local node_bin
  node_bin="$(readlink -f "$(command -v node)")" || die "node is not on PATH"
  echo "$node_bin"
  # ldd lines look like "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
  # "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
  ldd "$node_bin" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | sort -u
}

image_tag() {
  local node_bin
  node_bin="$(readlink -f "$(command -v node)")"
  {
    echo "format 1"
    # Binaries are identified by path, size and mtime: hashing 100 MB of node on every run would
    # cost more than everything else this script does when the image is already there.
    native_files | while read -r f; do stat -L -c '%n %s %Y' "$f"; done
    "$node_bin" --version
    (cd "$IMAGE_DIR" && find . -type f ! -name '*.test.ts' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
  } | sha256sum | cut -c1-12
}

build_image() {
  local ref="$1" node_bin rootfs f
  node_bin="$(readlink -f "$(command -v node)")"
  rootfs="$(mktemp -d)"
  log "building $ref from $node_bin"
  mkdir -p "$rootfs/usr/bin" "$rootfs/bin" "$rootfs/tmp" "$rootfs/etc" "$rootfs/nerva" "$rootfs/handlers" "$rootfs/modules" "$rootfs/app"
  chmod 1777 "$rootfs/tmp"
  native_files | while read -r f; do
    mkdir -p "$rootfs$(dirname "$f")"
    cp -L "$f" "$rootfs$f"
  done
  [ "$node_bin" = /usr/bin/node ] || cp -L "$node_bin" "$rootfs/usr/bin/node"
  ln -sf /usr/bin/node "$rootfs/bin/node"
  printf 'root:x:0:0:root:/root:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
  cp "$IMAGE_DIR"/agent/*.mjs "$rootfs/nerva/"
  cp "$IMAGE_DIR"/handlers/*.mjs "$rootfs/handlers/"
  cp "$IMAGE_DIR"/modules/*.mjs "$rootfs/modules/"
  cp "$IMAGE_DIR"/app/*.mjs "$rootfs/app/"
  chmod 0755 "$rootfs"/handlers/*.mjs "$rootfs"/nerva/*.mjs
  chmod 0755 "$rootfs"/app/*.mjs
  chmod 0644 "$rootfs"/modules/*.mjs
  tar --numeric-owner --owner=0 --group=0 -C "$rootfs" -c . |
    docker import \
      --change 'ENV PATH=/usr/bin:/bin' \
      --change 'WORKDIR /' \
      --change 'CMD ["/usr/bin/node", "/nerva/agent.mjs"]' \
      --change 'LABEL nerva.test-image=1' \
      - "$ref" >/dev/null
  docker tag "$ref" "$EXAMPLE_IMAGE"
  # Older builds of the test image only take disk space.
  docker images --format '{{.Repository}}:{{.Tag}}' "$IMAGE_NAME" | grep -vx "$ref" |
    xargs -r docker rmi >/dev/null 2>&1 || true
  rm -rf "$rootfs"
  log "built $ref"
}

ensure_image() {
  local ref
  ref="$IMAGE_NAME:$(image_tag)"
  if ! docker image inspect "$ref" >/dev/null 2>&1; then
    # Test files run in parallel and may all ask for the image at once: build it once.
    exec 9>"${TMPDIR:-/tmp}/nerva-docker-image.lock"
    flock 9
    docker image inspect "$ref" >/dev/null 2>&1 || build_image "$ref"
    flock -u 9
  fi
  if [ "$(docker image inspect -f '{{.Id}}' "$EXAMPLE_IMAGE" 2>/dev/null)" != "$(docker image inspect -f '{{.Id}}' "$ref")" ]; then
    docker tag "$ref" "$EXAMPLE_IMAGE"
  fi
  echo "$ref"
}

case "${1:-}" in
  --image)
    engine_up || die "the Docker engine does not answer (run .ci/docker.sh as root to install/start it)"
    ensure_image
    ;;
  "")
    install_docker
    start_dockerd
    ensure_image
    ;;
  *) die "unknown argument '$1' (use no argument, or --image)" ;;
esac
