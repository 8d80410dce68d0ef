#!/usr/bin/env bash
# Deploy-time benchmark on the local sandbox: site.yml with 1, 2 and 4 independent
# engines (profile sandbox-bench), then the idempotent re-run of each. Prints a table
# and writes it to .cache/bench/deploy.txt. Not a test: figures for the README.
#   tools/bench_deploy.sh            (counts from K3_BENCH_COUNTS, default "1 2 4")
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd -P)
export ANSIBLE_CONFIG=$REPO/ansible.cfg
# Per-task times: the engines' health wait is separated from the orchestration around it.
export ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks
PLAYBOOK=$REPO/.venv/ansible/bin/ansible-playbook
OUT=$REPO/.cache/bench
mkdir -p "$OUT"
hosts=$(mktemp)
trap 'rm -f "$hosts"' EXIT

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

.venv/vllm/bin/python tools/tiny_model.py .cache/sandbox/models/tiny-llama >/dev/null
rows=()
for n in ${K3_BENCH_COUNTS:-1 2 4}; do
  : >"$hosts"
  for i in $(seq 1 "$n"); do echo "k3-sb-e$i 10.77.0.$((20 + i)) engine" >>"$hosts"; done
  K3SB_HOSTS_FILE=$hosts tools/sandbox.sh down >/dev/null
  K3SB_HOSTS_FILE=$hosts tools/sandbox.sh up >/dev/null
  t=$(now)
  "$PLAYBOOK" site.yml -i inventories/sandbox -e k3_profile=sandbox-bench >"$OUT/deploy-$n.log"
  first=$(since "$t")
  t=$(now)
  "$PLAYBOOK" site.yml -i inventories/sandbox -e k3_profile=sandbox-bench >"$OUT/rerun-$n.log"
  rerun=$(since "$t")
  grep -q 'changed=[1-9]' "$OUT/rerun-$n.log" && { echo "re-run with $n engines changed something" >&2; exit 1; }
  # Seconds the engines took to start and become healthy (one call per host, all engines at once).
  wait=$(grep -E 'start those of the selected phases and wait until they are healthy' "$OUT/deploy-$n.log" |
    grep -oE '[0-9]+\.[0-9]+s' | tr -d s | sort -n | tail -1)
  rows+=("$n $first $rerun ${wait:-0}")
  echo "engines=$n deploy=${first}s rerun=${rerun}s engine-wait=${wait:-?}s"
  K3SB_HOSTS_FILE=$hosts tools/sandbox.sh down >/dev/null
done
{
  printf '%-8s %-9s %-9s %-12s %-10s %-13s %-12s\n' \
    engines deploy_s rerun_s vs_1_engine engine_s orchestration rerun/deploy
  read -r _n base _r _base_wait <<<"${rows[0]}"
  for row in "${rows[@]}"; do
    read -r n first rerun wait <<<"$row"
    awk -v n="$n" -v f="$first" -v r="$rerun" -v w="$wait" -v b="$base" \
      'BEGIN { printf "%-8s %-9s %-9s %-12.2f %-10s %-13.1f %-12.2f\n", n, f, r, f / b, w, f - w, r / f }'
  done
  echo "($(nproc) cores, $(date -u +%F))"
} | tee "$OUT/deploy.txt"
