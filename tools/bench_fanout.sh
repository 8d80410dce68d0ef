#!/usr/bin/env bash
# The checkpoint's fan-out against the physical limit: one seed, N receivers, every link shaped to
# one fixed rate; how long until every receiver holds a copy checked against the checkpoint's
# SHA-256 list, divided by the time of one copy over one link.
#
#   tools/bench_fanout.sh [SIZE_GIB] [RATE_MBIT] [RECEIVERS...]    (default: 2 500 2 4 8)
#   K3_FANOUT_PIECE=N (default 23: 2^N-byte pieces, the role's)  K3_FANOUT_RSYNC=0 (BitTorrent only)
#
# The hosts are network namespaces on a bridge of their own (fvbr0, 10.79.0.0/24), each link
# shaped with tc tbf both ways (netem is not available here). The checkpoint is generated: safetensors
# shards of 512 MiB of random bytes and a config, with their SHA-256 list. Measured side by side:
#   - BitTorrent as roles/model_weights runs it: mktorrent (-l 23), a private opentracker with this
#     torrent on its whitelist, a seeding aria2c and one aria2c per receiver, with the role's options;
#   - rsync from the one source (an rsync daemon on the seed), every receiver at once: what staging
#     from one shared folder does.
# Every copy is then checked with sha256sum -c. Before each phase the written pages go to disk and
# the page cache is emptied, so that no phase pays for the one before it. The receivers share this
# machine's two cores, so their checks run one after the other here; a node checks its own copy on
# its own CPU, so the figure adds the time of one check to the time the last copy arrived, and the
# script prints both.
# Needs root, aria2c, mktorrent, opentracker (Debian packages; make test-data unpacks opentracker).
# Leaves nothing behind (namespaces, links, files) however it ends.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd -P)
SIZE_GIB=${1:-2}
RATE=${2:-500}
PIECE=${K3_FANOUT_PIECE:-23}
WITH_RSYNC=${K3_FANOUT_RSYNC:-1}
shift $(($# < 2 ? $# : 2))
RECEIVERS=("$@")
((${#RECEIVERS[@]})) || RECEIVERS=(2 4 8)
MAX=0
for n in "${RECEIVERS[@]}"; do ((n > MAX)) && MAX=$n; done
WORK=$(mktemp -d /var/tmp/k3-fanout.XXXXXX)
BR=fvbr0
OT=$REPO/.cache/sandbox/opentracker
OPENTRACKER=$(command -v opentracker || echo "$OT/usr/bin/opentracker")
export LD_LIBRARY_PATH=$OT/usr/lib
ARIA=(aria2c --enable-dht=false --enable-dht6=false --bt-enable-lpd=false --console-log-level=error --summary-interval=0)

log() { printf '[fanout] %s\n' "$*" >&2; }
cleanup() {
  local ns
  for ns in $(ip netns list | awk '/^fv[0-9]/ {print $1}'); do
    ip netns pids "$ns" | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "$BR" 2>/dev/null || true
  for link in $(ip -o link | awk -F': ' '$2 ~ /^fv[0-9]+h/ {print $2}'); do ip link del "${link%@*}" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

host() { # $1 = index: namespace fv<i> at 10.79.0.(10+i), its link shaped to RATE both ways
  local ns=fv$1 ip=10.79.0.$((10 + $1))
  ip netns add "$ns"
  ip link add "fv$1h" type veth peer name eth0 netns "$ns"
  ip link set "fv$1h" master "$BR" up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "${RATE}mbit" burst 256kb latency 50ms
  tc qdisc add dev "fv$1h" root tbf rate "${RATE}mbit" burst 256kb latency 50ms
}

checked() { # $1 = folder: its copy against the list
  (cd "$1" && sha256sum --quiet -c "$WORK/SHA256SUMS")
}

settle() { # the dirty pages written out and the page cache emptied (the seed's folder is read again)
  sync
  echo 3 >/proc/sys/vm/drop_caches
}

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# --- the checkpoint and the hosts ---------------------------------------------------------------
log "checkpoint: $SIZE_GIB GiB in 512 MiB shards; links at $RATE Mbit/s; receivers: ${RECEIVERS[*]}"
mkdir -p "$WORK/seed/ckpt"
shards=$((SIZE_GIB * 2))
for i in $(seq 1 "$shards"); do
  head -c $((512 * 1024 * 1024)) /dev/urandom >"$WORK/seed/ckpt/$(printf 'model-%05d-of-%05d.safetensors' "$i" "$shards")"
done
printf '{"model_type": "llama"}\n' >"$WORK/seed/ckpt/config.json"
(cd "$WORK/seed/ckpt" && sha256sum ./* >"$WORK/SHA256SUMS")
ip link add "$BR" type bridge
ip link set "$BR" up
for i in $(seq 0 "$MAX"); do host "$i"; done
SEED=10.79.0.10

# One copy over one link: the floor every figure is divided by.
printf '[ckpt]\npath = %s\nread only = yes\nuid = root\ngid = root\n' "$WORK/seed/ckpt" >"$WORK/rsyncd.conf"
ip netns exec fv0 rsync --daemon --no-detach --port 873 --config="$WORK/rsyncd.conf" &
sleep 1
start=$(date +%s.%N)
ip netns exec fv1 rsync -a "rsync://$SEED/ckpt/" "$WORK/one/"
ONE=$(elapsed "$start")
start=$(date +%s.%N)
checked "$WORK/one"
CHECK=$(elapsed "$start")
rm -rf "$WORK/one"
log "one copy over one link: $ONE s; checking one copy: $CHECK s"

printf '| receivers | rsync from one source: last copy (s) | figure | with one check | BitTorrent: last copy (s) | figure | with one check |\n'
printf '|---|---|---|---|---|---|---|\n'
for n in "${RECEIVERS[@]}"; do
  RS=0
  if ((WITH_RSYNC)); then
    settle
    # rsync: every receiver from the one source at once.
    start=$(date +%s.%N)
    pids=()
    for i in $(seq 1 "$n"); do
      ip netns exec "fv$i" rsync -a "rsync://$SEED/ckpt/" "$WORK/r$i/" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    RS=$(elapsed "$start")
    for i in $(seq 1 "$n"); do
      checked "$WORK/r$i"
      rm -rf "$WORK/r$i"
    done
  fi
  # Each phase starts from the same state: what the one before wrote is on disk and out of the cache.
  settle
  # BitTorrent as the role runs it.
  rm -f "$WORK/ckpt.torrent"
  mktorrent -p -l "$PIECE" -a "http://$SEED:6969/announce" -o "$WORK/ckpt.torrent" "$WORK/seed/ckpt" >/dev/null
  "${ARIA[@]}" --show-files=true "$WORK/ckpt.torrent" | sed -n 's/^Info Hash: //p' >"$WORK/whitelist"
  # opentracker started as root drops to an unprivileged user before it reads its whitelist.
  chmod 0755 "$WORK"
  chmod 0644 "$WORK/whitelist"
  ip netns exec fv0 "$OPENTRACKER" -i "$SEED" -p 6969 -P 6969 -w "$WORK/whitelist" >/dev/null 2>&1 &
  tracker=$!
  ip netns exec fv0 "${ARIA[@]}" --seed-ratio=0.0 --bt-seed-unverified=true --listen-port=6881-6889 \
    --dir="$WORK/seed" "$WORK/ckpt.torrent" >"$WORK/seed.log" 2>&1 &
  seeder=$!
  sleep 1
  start=$(date +%s.%N)
  pids=()
  for i in $(seq 1 "$n"); do
    ip netns exec "fv$i" "${ARIA[@]}" --seed-time=0 --file-allocation=none --continue=true --bt-stop-timeout=30 \
      --listen-port=6881-6889 --dir="$WORK/b$i" "$WORK/ckpt.torrent" >"$WORK/b$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { tail -n 5 "$WORK/b$((i + 1)).log" "$WORK/seed.log" >&2; exit 1; }
  done
  BT=$(elapsed "$start")
  kill "$seeder" "$tracker" 2>/dev/null || true
  wait "$seeder" "$tracker" 2>/dev/null || true
  for i in $(seq 1 "$n"); do
    checked "$WORK/b$i/ckpt"
    rm -rf "$WORK/b$i"
  done
  awk -v n="$n" -v rs="$RS" -v bt="$BT" -v one="$ONE" -v chk="$CHECK" 'BEGIN {
    printf "| %d | %.1f | %.2f | %.2f | %.1f | %.2f | %.2f |\n", n, rs, rs / one, (rs + chk) / one, bt, bt / one, (bt + chk) / one }'
done
log "figure: last copy / one copy over one link (with one check: plus the time one node takes to check its copy);"
log "every copy was checked against the SHA-256 list; pieces of 2^$PIECE bytes"
