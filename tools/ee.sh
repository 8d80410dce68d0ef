#!/usr/bin/env bash
# The execution environment (AWX runs the playbooks inside it): built for real with ansible-builder
# and podman from execution-environment.yml, on a base image made here (no registry is reachable:
# a Debian trixie root filesystem from debootstrap, imported with `podman import`).
#   tools/ee.sh setup    podman, runc and debootstrap on this machine, and podman's settings here
#   tools/ee.sh base     the base image localhost/kimi-k3-ee-base:trixie (kept once made)
#   tools/ee.sh context  the build context in .cache/ee/context (collection tarballs included)
#   tools/ee.sh build    base, context, then `ansible-builder build`: localhost/kimi-k3-ee:<version>
# Prints the image's name on its last line. Needs root, podman, runc and debootstrap.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd -P)
BIN=$REPO/.venv/ansible/bin
BUILDER=${K3_EE_BUILDER:-$BIN/ansible-builder}
BUNDLED=$REPO/.venv/ansible/lib/python3.12/site-packages/ansible_collections
WORK=$REPO/.cache/ee
BASE_IMAGE=localhost/kimi-k3-ee-base:trixie
VERSION=$(awk '/^version:/ {print $2}' galaxy.yml)
IMAGE=localhost/kimi-k3-ee:$VERSION
# The collections the playbooks call, taken from the controller's pinned `ansible` bundle (Galaxy
# is not reachable here; where it is, collections/requirements.yml installs the same).
COLLECTIONS=(community/docker community/general ansible/posix community/library_inventory_filtering_v1)
MIRROR=${K3_EE_MIRROR:-http://deb.debian.org/debian}

log() { printf '[ee] %s\n' "$*" >&2; }

# podman 4.3 from Debian works here with runc (crun cannot set rlimits in this kind of machine) and
# explicit ulimits; both in a drop-in of its own.
setup() {
  if ! { command -v podman && command -v runc && command -v debootstrap; } >/dev/null; then
    tools/apt_install.sh podman runc debootstrap
  fi
  mkdir -p /etc/containers/containers.conf.d
  cat >/etc/containers/containers.conf.d/kimi-k3-ee.conf <<'CONF'
# kimi_k3.serving (tools/ee.sh setup): runc, and ulimits a container here may set.
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
CONF
}

base() {
  if podman image exists "$BASE_IMAGE"; then
    log "$BASE_IMAGE exists"
    return
  fi
  local root=$WORK/rootfs started=$SECONDS
  rm -rf "$root"
  mkdir -p "$WORK"
  log "debootstrap trixie minbase with python3 and pip from $MIRROR (about a minute)"
  debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates \
    trixie "$root" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || {
    tail -n 20 "$WORK/debootstrap.log" >&2
    exit 1
  }
  install -m 0755 ee/ee-pkg "$root/usr/local/sbin/ee-pkg"
  # The machine's certificate authorities (the network here may re-sign TLS): pip and apt-get in
  # the build trust what the machine trusts, also after a package runs update-ca-certificates.
  install -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  install -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/ca-certificates/machine.crt"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$root"
  log "$BASE_IMAGE imported in $((SECONDS - started)) s"
}

context() {
  local files=$WORK/files c
  rm -rf "$files" "$WORK/context"
  mkdir -p "$files"
  "$BIN/ansible-galaxy" collection build --force --output-path "$files" . >/dev/null
  mv "$files/kimi_k3-serving-$VERSION.tar.gz" "$files/kimi_k3-serving.tar.gz"
  # An installed collection (MANIFEST.json, FILES.json and its files) is a collection artifact as
  # Galaxy serves it, once tarred: ansible-galaxy installs it offline and checks FILES.json
  # (tools/collection_tarball.py: FILES.json as the files the `ansible` wheel really ships).
  for c in "${COLLECTIONS[@]}"; do
    "$BIN/python" tools/collection_tarball.py "$BUNDLED/$c" "$files/${c/\//-}.tar.gz"
  done
  "$BUILDER" create -f execution-environment.yml -c "$WORK/context" >/dev/null
  log "build context in $WORK/context"
}

build() {
  setup
  base
  context
  local started=$SECONDS
  # --network host: pip reaches PyPI and apt-get the Debian mirror as the machine does.
  "$BUILDER" build -f execution-environment.yml -c "$WORK/context" -t "$IMAGE" \
    --container-runtime podman --extra-build-cli-args "--network host" -v 2 >"$WORK/build.log" 2>&1 || {
    tail -n 40 "$WORK/build.log" >&2
    exit 1
  }
  log "$IMAGE built in $((SECONDS - started)) s; $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1 / 1e6}')"
  echo "$IMAGE"
}

case "${1:-build}" in
  setup) setup ;;
  base) base ;;
  context) context ;;
  build) build ;;
  *)
    echo "usage: tools/ee.sh [setup|base|context|build]" >&2
    exit 2
    ;;
esac
