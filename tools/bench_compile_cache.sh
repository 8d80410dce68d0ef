#!/usr/bin/env bash
# An engine's start with an empty compile cache against one that kept it: the real vLLM (CPU build)
# serving the sandbox's tiny model in torch.compile mode (no --enforce-eager), on the controller,
# with the sandbox engines' settings otherwise. Per round: cold (an empty VLLM_CACHE_ROOT,
# TORCHINDUCTOR_CACHE_DIR and TMPDIR), warm (the same three kept: a restart on the host runtime),
# warm with an empty TMPDIR (a restarted container whose /tmp is its own: only the mounted caches
# kept). Prints each start's seconds to /v1/models and vLLM's own "init engine" seconds, and writes
# them to .cache/bench/compile-cache.txt. Not a test: figures for docs/performance.md.
#   tools/bench_compile_cache.sh      (K3_BENCH_RUNS rounds, default 2; needs .venv/vllm and the model)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd -P)
VLLM=$REPO/.venv/vllm/bin/vllm
MODEL=$REPO/.cache/sandbox/models/tiny-llama
OUT=$REPO/.cache/bench
PORT=${K3_BENCH_PORT:-18190}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
[[ -x $VLLM && -f $MODEL/config.json ]] || {
  echo "needs .venv/vllm and the tiny model (make sandbox-setup)" >&2
  exit 2
}

# start LABEL CACHE TMP: one start, stopped once it answers.
start() {
  local label=$1 cache=$2 tmp=$3 began pid
  mkdir -p "$cache" "$tmp"
  began=$(date +%s.%N)
  env VLLM_ENABLE_V1_MULTIPROCESSING=0 HF_HUB_OFFLINE=1 VLLM_CACHE_ROOT="$cache/vllm" \
    TORCHINDUCTOR_CACHE_DIR="$cache/inductor" TRITON_CACHE_DIR="$cache/triton" TMPDIR="$tmp" \
    "$VLLM" serve "$MODEL" --port "$PORT" --served-model-name bench --max-model-len 512 --dtype float32 \
    --kv-cache-memory-bytes 64M --max-num-seqs 4 --distributed-executor-backend uni \
    >"$WORK/$label.log" 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null; do
    kill -0 "$pid" 2>/dev/null || {
      tail -20 "$WORK/$label.log" >&2
      echo "$label: vllm serve exited" >&2
      exit 1
    }
    sleep 0.5
  done
  printf '%-16s ready in %5.1f s, %s\n' "$label" "$(echo "$(date +%s.%N) - $began" | bc)" \
    "$(grep -o 'init engine.*took [0-9.]* s' "$WORK/$label.log" | sed 's/ (profile.*model)//')"
  kill "$pid"
  wait "$pid" || true
}

{
  echo "compile cache, $(date -u +%F), $(nproc) cores, $("$VLLM" --version 2>/dev/null | tail -1)"
  for round in $(seq 1 "${K3_BENCH_RUNS:-2}"); do
    start "cold-$round" "$WORK/cache-$round" "$WORK/tmp-$round"
    start "warm-$round" "$WORK/cache-$round" "$WORK/tmp-$round"
    start "warm-newtmp-$round" "$WORK/cache-$round" "$WORK/tmp-$round-new"
  done
  echo "sizes: the caches $(du -sh "$WORK/cache-1" | cut -f1), TMPDIR $(du -sh "$WORK/tmp-1" | cut -f1)"
  echo "AOT artifacts vLLM could not load (compiled again from the kept kernels): $(grep -l 'load failure' "$WORK"/warm-*.log | wc -l) of $((2 * ${K3_BENCH_RUNS:-2})) warm starts"
} | tee "$OUT/compile-cache.txt"
