# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Running the fabric check's vendor tools on a host: side by side, bounded in time, parsed.

``run_all`` runs commands at once, each to its end or the timeout, and hands each output to its
parser (module_utils fabric_collective, fabric_perftest, fabric_hccn). ``serve_all`` starts commands
in the background (perftest's servers, which end after their one client), their output and process
IDs in a folder; ``stop_all`` ends them and removes the folder.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.kimi_k3.serving.plugins.module_utils import fabric_collective, fabric_hccn, fabric_perftest

# What a result keeps of a tool's output (the run folder holds it; a sweep is a few KiB).
OUTPUT_LIMIT = 64 * 1024
# Commands of one host at once (an Ascend host pings from each of its NPUs).
WORKERS = 16
_ADDRESS = re.compile(r"ipaddr\s*:\s*(\S+)")


def parse_address(text):
    """``hccn_tool -i N -ip -g`` -> ``{address, failed, cause}``."""
    match = _ADDRESS.search(text or "")
    if match:
        return {"address": match.group(1), "failed": False, "cause": None}
    return {"address": None, "failed": True, "cause": "no ipaddr in hccn_tool's output"}


PARSERS = {
    "collective": fabric_collective.parse_collective,
    "hccl": fabric_collective.parse_hccl_test,
    "perftest": fabric_perftest.parse_perftest,
    "hccn_link": fabric_hccn.parse_link,
    "hccn_net_health": fabric_hccn.parse_net_health,
    "hccn_ping": fabric_hccn.parse_ping,
    "hccn_ip": parse_address,
}


def _program_missing(argv):
    program = argv[0] if argv else ""
    found = shutil.which(program) if os.sep not in program else (program if os.access(program, os.X_OK) else None)
    return None if found else "%s is not installed on this host" % program


def _parsed_failure(parsed):
    entries = parsed if isinstance(parsed, list) else [parsed]
    causes = [e.get("cause") or "failed" for e in entries if isinstance(e, dict) and e.get("failed")]
    return "; ".join(causes) or None


def run_one(run, timeout, environment):
    """One command to its end (or ``timeout``), parsed: the result ``fabric_tool`` returns for it."""
    result = {"name": run["name"], "argv": list(run["argv"]), "rc": None, "parsed": None, "output": ""}
    result.update(failed=True, missing=False, cause=None, seconds=0.0)
    missing = _program_missing(run["argv"])
    if missing:
        return dict(result, missing=True, cause=missing)
    started = time.monotonic()
    env = dict(os.environ, **{k: str(v) for k, v in (environment or {}).items()})
    try:
        done = subprocess.run(run["argv"], capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return dict(result, output=out[-OUTPUT_LIMIT:], cause="still running after %d s: ended" % timeout)
    except OSError as exc:
        return dict(result, cause="could not run %s: %s" % (run["argv"][0], exc))
    output = done.stdout + (("\n" + done.stderr) if done.stderr.strip() else "")
    parsed = PARSERS[run["parser"]](output)
    cause = _parsed_failure(parsed)
    if cause is None and done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "").splitlines()[-1:] or [""]
        cause = "exit %d: %s" % (done.returncode, last[0])
    result.update(rc=done.returncode, parsed=parsed, output=output[-OUTPUT_LIMIT:], failed=cause is not None)
    return dict(result, cause=cause, seconds=round(time.monotonic() - started, 2))


def run_all(runs, timeout, environment=None):
    """Every command at once; the results in the order of ``runs``."""
    if not runs:
        return []
    with ThreadPoolExecutor(max_workers=min(WORKERS, len(runs))) as pool:
        return list(pool.map(lambda r: run_one(r, timeout, environment), runs))


def _slug(name):
    return re.sub(r"[^\w.-]+", "_", name).strip("_")


def _port_of(argv):
    """The TCP port a server command listens on (perftest's ``-p``/``--port``), or None."""
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag in ("-p", "--port") and str(value).isdigit():
            return int(value)
    return None


def listening_ports():
    """TCP ports in LISTEN state on this host (from /proc/net/tcp and tcp6)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 3 and fields[3] == "0A":
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _wait_listening(procs, seconds=15.0):
    """Wait until every started server listens on its port (or has ended), ``seconds`` at most."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        open_ports = listening_ports()
        if all(port is None or port in open_ports or proc.poll() is not None for proc, port in procs):
            return
        time.sleep(0.1)


def serve_all(runs, workdir, environment=None):
    """Start each command in the background (output and PID in ``workdir``) and wait until each
    listens on its port; the names started."""
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    env = dict(os.environ, **{k: str(v) for k, v in (environment or {}).items()})
    started, procs = [], []
    for run in runs:
        missing = _program_missing(run["argv"])
        if missing:
            # The client then fails to connect, and the report names this host's missing tool.
            with open(os.path.join(workdir, _slug(run["name"]) + ".log"), "w", encoding="utf-8") as log:
                log.write(missing + "\n")
            continue
        with open(os.path.join(workdir, _slug(run["name"]) + ".log"), "wb") as log:
            proc = subprocess.Popen(  # noqa: S603 - the plan's command, no shell
                run["argv"], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        with open(os.path.join(workdir, _slug(run["name"]) + ".pid"), "w", encoding="ascii") as pid:
            pid.write("%d\n" % proc.pid)
        started.append(run["name"])
        procs.append((proc, _port_of(run["argv"])))
    _wait_listening(procs)
    return started


def stop_all(workdir):
    """End what ``serve_all`` started in ``workdir`` and remove it; the PIDs that were still running."""
    stopped = []
    if not os.path.isdir(workdir):
        return stopped
    for entry in sorted(os.listdir(workdir)):
        if not entry.endswith(".pid"):
            continue
        try:
            with open(os.path.join(workdir, entry), encoding="ascii") as handle:
                pid = int(handle.read().strip())
            os.killpg(pid, signal.SIGTERM)
            stopped.append(pid)
        except (OSError, ValueError):
            continue
    shutil.rmtree(workdir, ignore_errors=True)
    return stopped
