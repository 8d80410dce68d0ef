"""Self-check of tests/contract/argcheck.py: it accepts the spec's commands and can say no.

argcheck.py runs in .venv/vllm (vLLM's real parser); this file runs in the controller venv
and never imports vLLM. Every case goes through ONE argcheck process (vLLM's import takes
~8 s). Each refused case is a known-good command with exactly one thing broken, and each
refusal must name that thing, so a checker that refuses everything fails here too.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
VLLM_PY = ROOT / ".venv" / "vllm" / "bin" / "python"
ARGCHECK = ROOT / "tests" / "contract" / "argcheck.py"

# The AMD MI355X MoRIIO decode worker of the spec (kimi-k3-pd.sh decode), variables filled in.
ROUTER_IP, WORKER_IP = "192.0.2.10", "192.0.2.12"
CUSTOM_OPS = ["+fused_rms_norm_gated", "+quant_fp8", "+grouped_topk", "+sparse_attn_indexer", "none"]
DECODE_COMPILATION = json.dumps(
    {
        "mode": 3,
        "cudagraph_mode": "FULL_DECODE_ONLY",
        "max_cudagraph_capture_size": 240,
        "cudagraph_capture_sizes": [*range(1, 129), *range(130, 241, 10)],
        "custom_ops": CUSTOM_OPS,
    }
)
MORIIO = {
    "kv_connector": "MoRIIOConnector",
    "kv_role": "kv_consumer",
    "kv_load_failure_policy": "fail",
    "kv_connector_extra_config": {
        "backend": "rdma",
        "read_mode": True,
        "proxy_ip": ROUTER_IP,
        "proxy_ping_port": "36367",
        "host_ip": WORKER_IP,
        "http_port": "6100",
        "handshake_port": "26000",
        "notify_port": "27000",
    },
}
DSPARK = (
    '{"model":"/models/Inferact-Kimi-K3-DSpark","method":"dspark","num_speculative_tokens":4,'
    '"attention_backend":"ROCM_AITER_MLA","kv_cache_dtype":"fp8","draft_sample_method":"probabilistic",'
    '"rejection_sample_method":"block"}'
)
MI355X_DECODE = [
    "vllm", "serve", "/models/Kimi-K3",
    "--host", "0.0.0.0", "--port", "6100",
    "--served-model-name", "moonshotai/Kimi-K3",
    "--trust-remote-code",
    "--tensor-parallel-size", "8",
    "--decode-context-parallel-size", "8",
    "--cp-kv-cache-interleave-size", "1",
    "--dcp-comm-backend", "a2a",
    "--moe-backend", "auto",
    "--load-format", "fastsafetensors",
    "--gpu-memory-utilization", "0.90",
    "--language-model-only",
    "--enable-auto-tool-choice",
    "--tool-call-parser", "kimi_k3", "--reasoning-parser", "kimi_k3",
    "--max-model-len", "1048576",
    "--stream-interval", "10",
    "--enable-prefix-caching", "--prefix-match-unit", "128",
    "--kv-cache-dtype", "fp8", "--mamba-ssm-cache-dtype", "bfloat16",
    "--block-size", "128",
    "--attention-backend", "ROCM_AITER_MLA",
    "--attention-config", '{"mla_prefill_backend":"ROCM_AITER_FA","use_prefill_query_quantization":true}',
    "--speculative-config", DSPARK,
    "--max-num-seqs", "96",
    "--max-num-batched-tokens", "512",
    "--compilation-config", DECODE_COMPILATION,
    "--kv-transfer-config", json.dumps(MORIIO),
]  # fmt: skip

# An Ascend A3 PD decode engine (tutorial template), as a headless DP rank 3 of 8.
MOONCAKE = """{
  "kv_connector": "MooncakeConnectorV1",
  "kv_role": "kv_consumer",
  "kv_port": "36200",
  "kv_connector_extra_config": {
    "prefill": {"dp_size": 8, "tp_size": 16},
    "decode": {"dp_size": 8, "tp_size": 16}
  }
}"""
ADDITIONAL = '{"enable_cpu_binding":true, "enable_flashcomm1":true}'
ASCEND_HEADLESS = [
    "vllm", "serve", "/models/Kimi-K3",
    "--headless",
    "--host", "0.0.0.0", "--port", "9003",
    "--data-parallel-size", "8",
    "--data-parallel-rank", "3",
    "--data-parallel-address", "192.0.2.20",
    "--data-parallel-rpc-port", "13389",
    "--tensor-parallel-size", "16",
    "--enable-expert-parallel",
    "--seed", "1024",
    "--served-model-name", "kimi-k3",
    "--max-model-len", "133120",
    "--max-num-batched-tokens", "8192",
    "--max-num-seqs", "16",
    "--trust-remote-code",
    "--gpu-memory-utilization", "0.9",
    "--mm-encoder-tp-mode", "data",
    "--skip-mm-profiling",
    "--compilation-config", '{"cudagraph_mode": "FULL_DECODE_ONLY"}',
    "--safetensors_load_strategy", "prefetch",
    "--mamba-cache-mode", "align",
    "--enable-prefix-caching",
    "--additional-config", ADDITIONAL,
    "--limit-mm-per-prompt", '{"vision_chunk": 2}',
    "--kv-transfer-config", MOONCAKE,
]  # fmt: skip

# Spellings vLLM itself documents, which strictness must not break.
VLLM_SPELLINGS = [
    "vllm", "serve", "/models/Kimi-K3",
    "-tp", "8",
    "--max_model_len=4096",
    "--safetensors-load-strategy=prefetch",
    "--compilation-config.mode", "3",
    "-cc.custom_ops+", "+quant_fp8,none",
    "-O3",
]  # fmt: skip


def replaced(argv: list[str], old: str, new: str) -> list[str]:
    """argv with the one token `old` replaced by `new` (and proof that it was there)."""
    assert argv.count(old) == 1, old
    return [new if token == old else token for token in argv]


def without(argv: list[str], flag: str, value: str) -> list[str]:
    """argv without the option `flag value`."""
    index = argv.index(flag)
    assert argv[index + 1] == value, (flag, value)
    return argv[:index] + argv[index + 2 :]


def broken_moriio() -> str:
    config = dict(MORIIO)
    config["kv_load_failure_polcy"] = config.pop("kv_load_failure_policy")  # a typo'd key
    return json.dumps(config)


GOOD = {
    "mi355x-decode": MI355X_DECODE,
    "ascend-headless-dp-rank": ASCEND_HEADLESS,
    "vllm-own-spellings": VLLM_SPELLINGS,
}
# id -> (argv with one thing broken, text the refusal must contain)
BAD = {
    "unknown-flag": ([*MI355X_DECODE, "--kimi-k3-no-such-flag", "1"], "unrecognized arguments: --kimi-k3-no-such-flag"),
    "abbreviated-flag": (
        replaced(MI355X_DECODE, "--tensor-parallel-size", "--tensor-parallel"),
        "unrecognized arguments: --tensor-parallel 8",
    ),
    "abbreviated-underscore-flag": (
        replaced(ASCEND_HEADLESS, "--safetensors_load_strategy", "--safetensors_load"),
        "unrecognized arguments: --safetensors-load prefetch",
    ),
    "abbreviated-short-flag": (replaced(VLLM_SPELLINGS, "-tp", "-t"), "unrecognized arguments: -t 8"),
    "bad-json-compilation-config": (
        replaced(MI355X_DECODE, DECODE_COMPILATION, DECODE_COMPILATION[:-1]),
        "argument --compilation-config/-cc",
    ),
    "unknown-key-kv-transfer-config": (
        replaced(MI355X_DECODE, json.dumps(MORIIO), broken_moriio()),
        "kv_load_failure_polcy",
    ),
    "bad-enum-dcp-comm-backend": (
        replaced(MI355X_DECODE, "a2a", "a2b"),
        "argument --dcp-comm-backend: invalid choice: 'a2b'",
    ),
    "truncated-additional-config": (
        replaced(ASCEND_HEADLESS, ADDITIONAL, ADDITIONAL[:-1]),
        "--additional-config is not a JSON object",
    ),
    # Refused by validate_parsed_serve_args, not by the parser: proof that it runs too.
    "auto-tool-choice-without-parser": (
        without(MI355X_DECODE, "--tool-call-parser", "kimi_k3"),
        "--enable-auto-tool-choice requires --tool-call-parser",
    ),
}


def run_argcheck(payload: str, tmpdir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.run(
        [str(VLLM_PY), str(ARGCHECK), "-"],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )


@pytest.fixture(scope="session")
def argcheck_run(tmp_path_factory):
    """One argcheck process for every case; returns (process, verdicts by id, its TMPDIR)."""
    if not VLLM_PY.exists():
        skip_or_fail(f"{VLLM_PY} does not exist: build it with `tools/venvs.sh vllm`")
    cases = [{"id": case_id, "argv": argv} for case_id, argv in GOOD.items()]
    cases += [{"id": case_id, "argv": argv} for case_id, (argv, _unused) in BAD.items()]
    tmpdir = tmp_path_factory.mktemp("argcheck-tmpdir")
    proc = run_argcheck(json.dumps(cases), tmpdir)
    try:
        results = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"argcheck stdout is not JSON (rc={proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        )
    assert [result["id"] for result in results] == [case["id"] for case in cases]
    return proc, {result["id"]: result for result in results}, tmpdir


@pytest.mark.parametrize("case_id", GOOD)
def test_spec_command_is_accepted(argcheck_run, case_id):
    _unused, verdicts, _unused = argcheck_run
    assert verdicts[case_id] == {"id": case_id, "ok": True, "error": None}


@pytest.mark.parametrize("case_id", BAD)
def test_broken_command_is_refused_for_its_fault(argcheck_run, case_id):
    _unused, verdicts, _unused = argcheck_run
    verdict = verdicts[case_id]
    assert verdict["ok"] is False
    assert BAD[case_id][1] in verdict["error"]


def test_exit_status_and_clean_output(argcheck_run):
    proc, verdicts, tmpdir = argcheck_run
    assert proc.returncode == 1  # some cases are refused
    assert set(verdicts) == set(GOOD) | set(BAD)
    # vLLM's logging went to stderr: stdout held nothing but the JSON verdicts.
    assert proc.stdout.lstrip().startswith("[")
    assert proc.stdout.rstrip().endswith("]")
    # Its scratch folder (caches, TMPDIR for vLLM) was made under our TMPDIR and removed.
    assert list(tmpdir.iterdir()) == []


def test_malformed_input_is_a_usage_error(tmp_path):
    if not VLLM_PY.exists():
        skip_or_fail(f"{VLLM_PY} does not exist: build it with `tools/venvs.sh vllm`")
    proc = run_argcheck(json.dumps([{"id": "x", "argv": ["python", "-m", "vllm"]}]), tmp_path)
    assert proc.returncode == 2
    assert 'argv must start with "vllm", "serve"' in proc.stderr
    assert proc.stdout == ""
