#!/usr/bin/env bash
# The idempotent re-run of site.yml against its floor, on a deployed inventory (make sandbox first).
# The floor: one ansible.builtin.ping round over the same hosts plus playbooks/plan.yml alone, in the
# same run. Prints the medians of K3_BENCH_RUNS rounds (default 3): wall times, the re-run's ratio
# to the floor (target: at most 5) and the controller's CPU seconds per host (target: at most 2.5),
# and writes them to .cache/bench/rerun.txt. Not a test: figures for docs/performance.md.
#   tools/bench_rerun.sh [INVENTORY]     (default inventories/sandbox, with the sandbox's secrets)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd -P)
export ANSIBLE_CONFIG=$REPO/ansible.cfg
BIN=$REPO/.venv/ansible/bin
OUT=$REPO/.cache/bench
INVENTORY=${1:-inventories/sandbox}
mkdir -p "$OUT"
# shellcheck source=tools/bench_lib.sh
source tools/bench_lib.sh
read -r -a SECRETS <<<"$(tools/sandbox_secrets.sh)"
hosts=$("$BIN/ansible" all -i "$INVENTORY" --list-hosts | tail -n +2 | wc -l)

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ping=() plan=() rerun=() ctl=()
for _ in $(seq 1 "${K3_BENCH_RUNS:-3}"); do
  # (timed fails as its command does, and the assignment stops the script.)
  out=$(timed "$OUT/rerun-ping.log" "$BIN/ansible" all -i "$INVENTORY" -m ansible.builtin.ping)
  ping+=("${out%% *}")
  out=$(timed "$OUT/rerun-plan.log" "$BIN/ansible-playbook" playbooks/plan.yml -i "$INVENTORY" "${SECRETS[@]}")
  plan+=("${out%% *}")
  out=$(timed "$OUT/rerun-site.log" "$BIN/ansible-playbook" site.yml -i "$INVENTORY" "${SECRETS[@]}")
  read -r t c _h <<<"$out"
  grep -q 'changed=[1-9]' "$OUT/rerun-site.log" && { echo "the re-run changed something: $OUT/rerun-site.log" >&2; exit 1; }
  rerun+=("$t")
  ctl+=("$c")
done
p=$(printf '%s\n' "${ping[@]}" | median)
l=$(printf '%s\n' "${plan[@]}" | median)
r=$(printf '%s\n' "${rerun[@]}" | median)
c=$(printf '%s\n' "${ctl[@]}" | median)
tasks=$(grep -c '^TASK \[' "$OUT/rerun-site.log" || true)
awk -v p="$p" -v l="$l" -v r="$r" -v c="$c" -v n="$hosts" -v k="$tasks" -v runs="${#rerun[@]}" -v cores="$(nproc)" \
  -v day="$(date -u +%F)" 'BEGIN {
    printf "hosts %d, %d tasks in the re-run, medians of %d rounds (%d cores, %s)\n", n, k, runs, cores, day
    printf "floor: ping %.1f s + plan %.1f s = %.1f s\n", p, l, p + l
    printf "site.yml re-run: %.1f s, %.2fx the floor (target <= 5)\n", r, r / (p + l)
    printf "controller CPU: %.1f s, %.2f s per host (target <= 2.5)\n", c, c / n
  }' | tee "$OUT/rerun.txt"
