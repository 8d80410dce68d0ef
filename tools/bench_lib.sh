# shellcheck shell=bash
# Timing helpers of the benchmark scripts (sourced by tools/bench_*.sh).

now() { date +%s.%N; }
# The machine's busy CPU time (user, nice, system, irq, softirq, steal), in clock ticks.
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
# timed LOG CMD...: runs CMD (output in LOG, errors on stderr) and prints its wall time, the CPU
# seconds of the controller's side (bash's `time`: the command and every process it waited for,
# Ansible's workers and their ssh clients) and the CPU seconds the rest of the machine used
# meanwhile (the test hosts: sshd, their Python and modules, the services). Fails as CMD.
timed() {
  local log=$1 t b0 cpu TIMEFORMAT='%U %S'
  shift
  t=$(now)
  b0=$(busy)
  cpu=$({ time "$@" >"$log" 2>&3; } 3>&2 2>&1) || return
  awk -v a="$t" -v b="$(now)" -v b0="$b0" -v b1="$(busy)" -v hz="$(getconf CLK_TCK)" -v cpu="$cpu" '
    BEGIN { split(cpu, c, " "); ctl = c[1] + c[2]; printf "%.1f %.1f %.1f\n", b - a, ctl, (b1 - b0) / hz - ctl }'
}
