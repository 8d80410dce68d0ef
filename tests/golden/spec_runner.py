"""Run a spec command block (or a plan's launch script) and record what it would execute.

A stand-in `vllm` / `vllm-router` / `python` on PATH records its argv and
environment as JSON and exits: nothing is served. `source FILE` lines are
recorded instead of run (the Ascend toolkit is not on this machine).
"""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

SPEC_DIR = Path(__file__).parent / "spec"
BASELINE_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    # Present so the Ascend templates' `unset *_proxy` lines are observable.
    "http_proxy": "http://proxy.invalid:3128",
    "HTTPS_PROXY": "http://proxy.invalid:3128",
    "ftp_proxy": "http://proxy.invalid:3128",
}
# The stand-in runs with this interpreter, named by its path: a stand-in for python3 on PATH would
# otherwise run itself.
RECORDER = """#!%s
import json, os, sys
with open(%r, "w") as out:
    json.dump({"argv": [%r or os.path.basename(sys.argv[0])] + sys.argv[1:], "env": dict(os.environ)}, out)
"""


def spec_text(name: str) -> str:
    return (SPEC_DIR / name).read_text()


def run_script(text: str, args=(), env=None, substitutions=None, programs=("vllm", "vllm-router", "python")):
    """Run ``text`` with bash; return {"argv", "env" (changes only), "unset", "sourced"}."""
    for placeholder, value in (substitutions or {}).items():
        text = text.replace(placeholder, str(value))
    leftover = re.findall(r"<[A-Z0-9_]+>", text)
    if leftover:
        raise AssertionError("unsubstituted placeholders: %s" % sorted(set(leftover)))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        bindir = tmp / "bin"
        bindir.mkdir()
        record = tmp / "record.json"
        sourced = tmp / "sourced.txt"
        sourced.write_text("")
        for prog in programs:
            # Only ever in the temporary folder: a program named by its absolute path (the tests run
            # as root) gets a stand-in there, which the script is made to run in its place, and which
            # records the absolute name.
            path = bindir / Path(prog).name
            if Path(prog).is_absolute():
                text = re.sub(r"(?<![\w/.-])%s(?![\w/.-])" % re.escape(prog), str(path), text)
            path.write_text(RECORDER % (sys.executable, str(record), prog if Path(prog).is_absolute() else ""))
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        text = re.sub(
            r"^(\s*)source\s+(\S+)\s*$",
            lambda m: "%secho %s >> %s" % (m.group(1), m.group(2), sourced),
            text,
            flags=re.M,
        )
        script = tmp / "run.sh"
        script.write_text(text)
        base = dict(BASELINE_ENV)
        base["PATH"] = "%s:%s" % (bindir, base["PATH"])
        base.update(env or {})
        proc = subprocess.run(
            ["bash", str(script), *map(str, args)], env=base, capture_output=True, text=True, check=False
        )
        if not record.exists():
            raise AssertionError("script did not run a recorded program: rc=%s\n%s" % (proc.returncode, proc.stderr))
        data = json.loads(record.read_text())
        sourced_files = [line for line in sourced.read_text().splitlines() if line]
    changed = {k: v for k, v in data["env"].items() if base.get(k) != v and k not in ("PWD", "SHLVL", "_", "OLDPWD")}
    removed = sorted(k for k in base if k not in data["env"])
    return {
        "argv": data["argv"],
        "env": changed,
        "unset": removed,
        "sourced": sourced_files,
    }


# The collection's own addition to the recipes' containers (NVIDIA, ROCm): the compile caches on a
# host folder mounted at /kimi-k3-cache, so that a restart does not compile again.
COMPILE_CACHE_ENV = {
    "VLLM_CACHE_ROOT": "/kimi-k3-cache/vllm",
    "TORCHINDUCTOR_CACHE_DIR": "/kimi-k3-cache/inductor",
    "TRITON_CACHE_DIR": "/kimi-k3-cache/triton",
}


def expected_env_from_plan(service):
    """What a plan service's environment looks like after its launch script ran."""
    env = dict(service["env"])
    for key, value in (service.get("shell") or {}).get("prepend", {}).items():
        env[key] = value + ":" + BASELINE_ENV.get(key, "")
    return env


def _canon(token):
    if token[:1] in "{[":
        try:
            return ("json", json.loads(token))
        except ValueError:
            return ("text", token)
    return ("text", token)


def assert_same_argv(got, want):
    """Token by token; JSON-valued arguments compare as JSON (the spec pretty-prints some)."""
    g = [_canon(t) for t in got]
    w = [_canon(t) for t in want]
    if g != w:
        lines = ["argv differs:"]
        for i in range(max(len(g), len(w))):
            a = got[i] if i < len(got) else "<missing>"
            b = want[i] if i < len(want) else "<missing>"
            mark = "  " if (i < len(g) and i < len(w) and g[i] == w[i]) else "!!"
            lines.append("%s %3d plan=%r spec=%r" % (mark, i, a, b))
        raise AssertionError("\n".join(lines))


# The tutorial exports its site placeholders (MODEL_PATH, LOCAL_IP ...) only to
# substitute them into the command; the plan writes the values into argv/env instead.
SITE_VARS = {"MODEL_PATH", "LOCAL_IP", "NIC_NAME", "PORT", "RPC_PORT", "NODE0_IP", "DP_START_RANK"}


def spec_run(fixture, host_ip, node0_ip, start_rank, edits=()):
    """Run an Ascend tutorial block (``edits``: (old, new) replacements first) with the example inventories' values."""
    text = spec_text(fixture)
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    subs = {
        "<KIMI_K3_MODEL_PATH>": "/root/.cache/Kimi-K3-w4a8",
        "<NODE0_LOCAL_IP>": node0_ip,
        "<WORKER_LOCAL_IP>": host_ip,
        "<NODE0_NIC_NAME>": "eth0",
        "<WORKER_NIC_NAME>": "eth0",
        "<SERVICE_PORT>": "8000",
        "<DP_RPC_PORT>": "13389",
        "<1_OR_2_OR_3>": str(start_rank),
        "<1_TO_7>": str(start_rank),
    }
    got = run_script(text, substitutions=subs)
    got["env"] = {k: v for k, v in got["env"].items() if k not in SITE_VARS}
    return got
