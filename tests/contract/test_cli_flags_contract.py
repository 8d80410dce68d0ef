# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Contract: the committed flag lists are what the real programs take today.

tools/gen_cli_flags.py --check reads vLLM's serve parser (.venv/vllm) and `vllm-router --help`
(.venv/services) again and compares with plugins/plugin_utils/data/cli_flags_*.json. The proxy is
not installed here: its committed list is checked for its form, and its reader is checked on a
small argparse script. Every flag of every example plan's vllm, router and proxy command is in
the data and passes the checker.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, example_names, example_plan, skip_or_fail

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _cli_flags as cli_flags

GENERATOR = ROOT / "tools" / "gen_cli_flags.py"
VLLM_PY = ROOT / ".venv" / "vllm" / "bin" / "python"
ROUTER = ROOT / ".venv" / "services" / "bin" / "vllm-router"

# Service kind in a plan -> program of the checker, and the argv words before the first flag.
KINDS = {"vllm": ("vllm", 3), "router": ("vllm-router", 1), "proxy": ("proxy", 2)}


def generator(*args):
    return subprocess.run(
        [sys.executable, str(GENERATOR), *args], capture_output=True, text=True, check=False, timeout=900
    )


def need(*programs):
    for program in programs:
        if program == "vllm" and not VLLM_PY.exists():
            skip_or_fail(".venv/vllm is missing: run `make venv-vllm` for the real-parser contract")
        if program == "vllm-router" and not ROUTER.exists():
            skip_or_fail(".venv/services is missing: run `make venv-services` for the vllm-router contract")


def test_committed_data_is_what_the_real_programs_give():
    need("vllm", "vllm-router")
    proc = generator("--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for program in cli_flags.PROGRAMS:
        assert "%s: " % program in proc.stdout


def test_check_fails_when_the_data_differs(tmp_path):
    need("vllm-router")
    for program in cli_flags.PROGRAMS:
        shutil.copy(cli_flags.data_path(program), tmp_path)
    path = tmp_path / "cli_flags_vllm_router.json"
    data = json.loads(path.read_text())
    del data["flags"]["--vllm-pd-disaggregation"]
    data["flags"]["--kimi-k3-no-such-flag"] = "none"
    path.write_text(json.dumps(data, indent=2) + "\n")
    proc = generator("--check", "--only", "vllm-router", "--data-dir", str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert '+    "--vllm-pd-disaggregation": "none"' in proc.stderr
    assert '-    "--kimi-k3-no-such-flag": "none"' in proc.stderr


def test_check_fails_on_a_malformed_proxy_list(tmp_path):
    (tmp_path / "cli_flags_proxy.json").write_text(json.dumps({"header": {"program": "proxy"}, "flags": {}}))
    proc = generator("--check", "--only", "proxy", "--data-dir", str(tmp_path))
    assert proc.returncode == 1
    assert "header.version is missing" in proc.stderr


def test_the_proxy_reader_reads_argparse_calls():
    spec = importlib.util.spec_from_file_location("gen_cli_flags", GENERATOR)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    source = "\n".join(
        [
            "import argparse",
            "def parse_args():",
            "    parser = argparse.ArgumentParser()",
            '    parser.add_argument("--port", type=int, default=8000)',
            '    parser.add_argument("--prefiller-hosts", type=str, nargs="+", default=["localhost"])',
            '    parser.add_argument("--verbose", "-v", action="store_true")',
            '    parser.add_argument("--level", nargs="?", default=None)',
            '    parser.add_argument("model")',
            "    return parser.parse_args()",
        ]
    )
    assert gen.proxy_flags_from_source(source) == {
        "--help": "none",
        "--level": "optional",
        "--port": "required",
        "--prefiller-hosts": "required",
        "--verbose": "none",
        "-h": "none",
        "-v": "none",
    }


def example_commands(name):
    for host, data in example_plan(name)["hosts"].items():
        for svc in data["services"]:
            if svc["kind"] in KINDS:
                yield host, svc


def flag_pairs(argv, start):
    """``[(flag, value)]`` of a command line: a flag's value is the words up to the next flag."""
    pairs = []
    for word in argv[start:]:
        is_flag = word.startswith("-") and len(word) > 1 and not word[1].isdigit() and word[1] != "."
        if is_flag:
            pairs.append([word, []])
        elif pairs:
            pairs[-1][1].append(word)
        else:
            raise AssertionError("%r before the first flag of %r" % (word, argv))
    return [(flag, True if not values else values[0] if len(values) == 1 else values) for flag, values in pairs]


@pytest.mark.parametrize("name", example_names())
def test_every_flag_of_every_example_plan_is_in_the_data(name):
    seen = set()
    for host, svc in example_commands(name):
        program, start = KINDS[svc["kind"]]
        argv = svc["argv"]
        if program == "vllm":
            assert argv[:2] == ["vllm", "serve"], argv
        elif program == "vllm-router":
            assert argv[0] == "vllm-router", argv
        else:
            assert argv[1].endswith("/load_balance_proxy_server_example.py"), argv
        known = set(cli_flags.known_flags(program))
        underscores = cli_flags.program_data(program)["header"]["underscores"]
        pairs = flag_pairs(argv, start)
        # As the program reads them: vLLM takes --a_b for --a-b (the Ascend tutorial's spelling).
        spelled = [flag.replace("_", "-") if underscores else flag for flag, _unused in pairs]
        missing = [flag for flag in spelled if flag not in known]
        assert not missing, "%s/%s: %s not in the %s data" % (host, svc["name"], missing, program)
        problems = cli_flags.check_args(program, [{flag: value} for flag, value in pairs], where=host)
        assert problems == [], "\n".join(problems)
        seen.add(program)
    assert "vllm" in seen
