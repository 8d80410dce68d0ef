#!/usr/bin/env bash
# How the collection's own orchestration grows with hosts: site.yml (first run and re-run) and
# restart.yml (in four batches) on 4, 16 and 32 test hosts, each running a STAND-IN engine (tools/standin/bin/vllm:
# an HTTP server that answers /health, /v1/models, /metrics and chat at once, not vLLM), so what
# is timed is the collection, not vLLM's start-up (measured separately: tools/bench_deploy.sh).
# Profile sandbox-bench: N independent engines, one per host. Prints a table and writes it to
# .cache/bench/scale.txt. Not a test: figures for the README.
#   tools/bench_scale.sh            (counts from K3_BENCH_COUNTS, default "4 16 32")
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd -P)
export ANSIBLE_CONFIG=$REPO/ansible.cfg
PLAYBOOK=$REPO/.venv/ansible/bin/ansible-playbook
OUT=$REPO/.cache/bench
mkdir -p "$OUT"
hosts=$(mktemp)
# The hosts go whatever happens (a failed run must not leave dozens of them running).
trap 'K3SB_HOSTS_FILE=$hosts tools/sandbox.sh down >/dev/null 2>&1; rm -f "$hosts"' EXIT
# The stand-in is mounted into every host like the real venvs; the engines run it as `vllm`.
export K3SB_EXTRA_BINDS=$REPO/tools/standin
ARGS=(-i inventories/sandbox -e k3_profile=sandbox-bench -e "engine_venv=$REPO/tools/standin" -e engine_health_delay=1)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

.venv/vllm/bin/python tools/tiny_model.py .cache/sandbox/models/tiny-llama >/dev/null
rows=()
for n in ${K3_BENCH_COUNTS:-4 16 32}; do
  : >"$hosts"
  for i in $(seq 1 "$n"); do echo "k3-sb-e$i 10.77.0.$((20 + i)) engine" >>"$hosts"; done
  K3SB_HOSTS_FILE=$hosts tools/sandbox.sh down >/dev/null
  K3SB_HOSTS_FILE=$hosts tools/sandbox.sh up >/dev/null
  t=$(now)
  "$PLAYBOOK" site.yml "${ARGS[@]}" >"$OUT/scale-site-$n.log"
  site=$(since "$t")
  t=$(now)
  "$PLAYBOOK" site.yml "${ARGS[@]}" >"$OUT/scale-rerun-$n.log"
  rerun=$(since "$t")
  grep -q 'changed=[1-9]' "$OUT/scale-rerun-$n.log" && { echo "re-run with $n hosts changed something" >&2; exit 1; }
  t=$(now)
  # Four batches at every size (N/4 engines each): the same number of steps, N times the hosts.
  "$PLAYBOOK" playbooks/restart.yml "${ARGS[@]}" -e restart_serial=$((n / 4)) >"$OUT/scale-restart-$n.log"
  restart=$(since "$t")
  grep -q "restarted $n replica group(s)" "$OUT/scale-restart-$n.log" || { echo "restart.yml with $n hosts did not restart $n groups" >&2; exit 1; }
  rows+=("$n $site $rerun $restart")
  echo "hosts=$n site=${site}s rerun=${rerun}s restart=${restart}s"
  K3SB_HOSTS_FILE=$hosts tools/sandbox.sh down >/dev/null
done
{
  printf '%-6s %-8s %-9s %-10s %-10s %-12s\n' hosts site_s rerun_s restart_s site_vs_4 restart_vs_4
  read -r _n base _r base_restart <<<"${rows[0]}"
  for row in "${rows[@]}"; do
    read -r n site rerun restart <<<"$row"
    awk -v n="$n" -v s="$site" -v r="$rerun" -v x="$restart" -v b="$base" -v bx="$base_restart" \
      'BEGIN { printf "%-6s %-8s %-9s %-10s %-10.2f %-12.2f\n", n, s, r, x, s / b, x / bx }'
  done
  echo "($(nproc) cores, $(date -u +%F); the engines are stand-ins)"
} | tee "$OUT/scale.txt"
