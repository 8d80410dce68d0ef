#!/usr/bin/env bash
# Debian packages that the test hosts install "from the distribution" (docker.io and what it
# needs, for the container_runtime role's test), downloaded once into a local flat repository,
# indexed and signed: the hosts have no route out, and no test downloads anything. An install
# step (make test runs it), like the virtualenvs; a second run with the same list is a no-op.
#   tools/fetch_debs.sh DIR PACKAGE...
# The set is what apt on the sandbox's base rootfs (tools/sandbox.sh base) would install.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd -P)
out=$1
shift
want="bookworm-minbase: $*"
if [[ -f $out/.packages && $(cat "$out/.packages") == "$want" && -f $out/InRelease ]]; then
  echo "[debs] $out: ready (stamp matches), nothing to do"
  exit 0
fi
base=$(tools/sandbox.sh base | tail -n 1)
tmp=$(mktemp -d)
cleanup() {
  umount "$tmp/root" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp"/{upper,work,root}
mount -t overlay overlay -o "lowerdir=$base,upperdir=$tmp/upper,workdir=$tmp/work" "$tmp/root"
cp /etc/resolv.conf "$tmp/root/etc/resolv.conf"
start=$(date +%s)
systemd-nspawn -q --register=no --keep-unit -D "$tmp/root" --resolv-conf=off --timezone=off \
  env DEBIAN_FRONTEND=noninteractive bash -c \
  "apt-get update -q >/dev/null && apt-get install -y -q --download-only --no-install-recommends $*" \
  >"$tmp/apt.log" 2>&1 || { tail -n 20 "$tmp/apt.log" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/pool"
cp "$tmp/root"/var/cache/apt/archives/*.deb "$out/pool/"
"$REPO/.venv/ansible/bin/python" tests/prerequisites/build_repo.py --index "$out"
echo "$want" >"$out/.packages"
echo "[debs] $out: $(find "$out/pool" -name '*.deb' | wc -l) packages in $(($(date +%s) - start))s"
