# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Running the fabric check's vendor tools on a host: side by side, bounded in time, parsed.

``run_all`` runs commands at once (through the module's ``run_command``), each to its end or the
timeout, and hands each output to its parser (module_utils fabric_collective, fabric_perftest,
fabric_hccn). ``serve_all`` starts commands in the background (perftest's servers, which end after
their one client), their output and process IDs in a folder; ``stop_all`` ends them and removes
the folder.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.kimi_k3.serving.plugins.module_utils import fabric_collective, fabric_hccn, fabric_perftest

# What a result keeps of a tool's output (the run folder holds it; a sweep is a few KiB).
OUTPUT_LIMIT = 64 * 1024
# Commands of one host at once (an Ascend host pings from each of its NPUs).
WORKERS = 16
PARSERS = {
    "collective": fabric_collective.parse_collective,
    "hccl": fabric_collective.parse_hccl_test,
    "perftest": fabric_perftest.parse_perftest,
    "hccn_link": fabric_hccn.parse_link,
    "hccn_net_health": fabric_hccn.parse_net_health,
    "hccn_ping": fabric_hccn.parse_ping,
    "hccn_ip": fabric_hccn.parse_address,
}


def _program_missing(argv):
    program = argv[0] if argv else ""
    found = shutil.which(program) if os.sep not in program else (program if os.access(program, os.X_OK) else None)
    return None if found else "%s is not installed on this host" % program


def _parsed_failure(parsed):
    """The parser's cause of failure, or None; a parser that found nothing (an empty list) fails too."""
    if isinstance(parsed, list) and not parsed:
        return "no result in its output"
    entries = parsed if isinstance(parsed, list) else [parsed]
    causes = [e.get("cause") or "failed" for e in entries if isinstance(e, dict) and e.get("failed")]
    return "; ".join(causes) or None


def run_one(runner, run, timeout, environment):
    """One command to its end (or ``timeout``, through coreutils' ``timeout``), parsed: the result
    ``fabric_tool`` returns for it. ``runner`` is a module's ``run_command``."""
    result = {"name": run["name"], "argv": list(run["argv"]), "rc": None, "parsed": None, "output": ""}
    result.update(failed=True, missing=False, cause=None, seconds=0.0)
    missing = _program_missing(run["argv"])
    if missing:
        return dict(result, missing=True, cause=missing)
    started = time.monotonic()
    env = {k: str(v) for k, v in (environment or {}).items()}
    argv = ["timeout", "--kill-after=10", str(timeout), *run["argv"]]
    try:
        rc, out, err = runner(argv, environ_update=env)
    except OSError as exc:
        return dict(result, cause="could not run %s: %s" % (run["argv"][0], exc))
    output = out + (("\n" + err) if err.strip() else "")
    result.update(rc=rc, output=output[-OUTPUT_LIMIT:], seconds=round(time.monotonic() - started, 2))
    if rc in (124, 137):
        return dict(result, cause="still running after %d s: ended" % timeout)
    return dict(result, **read_output(run["parser"], out, err, rc))


def read_output(parser, out, err="", rc=0):
    """What a tool printed, parsed: ``{parsed, failed, cause}`` (the parser's cause, else a non-zero exit's)."""
    parsed = PARSERS[parser](out + (("\n" + err) if err.strip() else ""))
    cause = _parsed_failure(parsed)
    if cause is None and rc != 0:
        last = (err.strip() or out.strip() or "").splitlines()[-1:] or [""]
        cause = "exit %d: %s" % (rc, last[0])
    return {"parsed": parsed, "failed": cause is not None, "cause": cause}


def run_all(runner, runs, timeout, environment=None):
    """Every command at once; the results in the order of ``runs``."""
    if not runs:
        return []
    with ThreadPoolExecutor(max_workers=min(WORKERS, len(runs))) as pool:
        return list(pool.map(lambda r: run_one(runner, r, timeout, environment), runs))


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


def _ended(pid):
    """Whether our child ``pid`` has ended (reaping it)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return True


def _wait_listening(started, seconds=15.0):
    """Wait until every started server listens on its port (or has ended), ``seconds`` at most."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        open_ports = listening_ports()
        if all(port is None or port in open_ports or _ended(pid) for pid, port in started):
            return
        time.sleep(0.1)


def spawn(argv, log_path, env):
    """Start ``argv`` detached from this module (a session of its own, its output in ``log_path``,
    no descriptor of the module's kept): it outlives the module, as a server must. Its PID."""
    pid = os.fork()
    if pid:
        return pid
    status = 127
    try:
        os.setsid()
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.closerange(3, 65536)
        os.execvpe(argv[0], argv, env)
    except BaseException:  # noqa: BLE001 - the child must never return into the module's code
        status = 127
    finally:
        os._exit(status)


def serve_all(runs, workdir, environment=None):
    """Start each command in the background (output and PID in ``workdir``) and wait until each
    listens on its port; the names started."""
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    env = dict(os.environ, **{k: str(v) for k, v in (environment or {}).items()})
    started, pids = [], []
    for run in runs:
        log_path = os.path.join(workdir, _slug(run["name"]) + ".log")
        missing = _program_missing(run["argv"])
        if missing:
            # The client then fails to connect, and the report names this host's missing tool.
            with open(log_path, "w", encoding="utf-8") as log:
                log.write(missing + "\n")
            continue
        pid = spawn(list(run["argv"]), log_path, env)
        with open(os.path.join(workdir, _slug(run["name"]) + ".pid"), "w", encoding="ascii") as handle:
            handle.write("%d\n" % pid)
        started.append(run["name"])
        pids.append((pid, _port_of(run["argv"])))
    _wait_listening(pids)
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
