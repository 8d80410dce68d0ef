"""Run the REAL memcache_hybrid MetaService for a test, exactly as the Ascend tutorial starts it.

    MMC_META_CONFIG_PATH=<conf> python -c "from memcache_hybrid import MetaService; MetaService.main()"

with the Python of .venv/services (tools/venvs.sh services). Controller side: stdlib only,
never imports memcache_hybrid itself.

    with run_metaservice(conf, "http://127.0.0.1:PORT/health") as meta:
        ...  # meta.health is the JSON /health answered; meta.process the Popen

Facts this relies on (memcache-hybrid 1.3.0, measured): the config is `key = value` lines
with `#` comments; `ock.mmc.meta_service.metrics_url` serves GET /health (JSON with
"status": "ok") and /metrics; logs go to `<ock.mmc.log_path>/logs/mmc-meta.log` and
`mmc-meta-audit.log` (default log_path /var/log/memcache_hybrid); a bad config makes
MetaService.main() print the reason on stdout and return -1, so the process EXITS WITH
STATUS 0: any exit before /health answers is a failure, whatever the status. SIGTERM
stops it in ~5 s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICES_PYTHON = ROOT / ".venv" / "services" / "bin" / "python"
META_MAIN = "from memcache_hybrid import MetaService; MetaService.main()"
LOG_PATH_KEY = "ock.mmc.log_path"
DEFAULT_LOG_PATH = "/var/log/memcache_hybrid"


class MetaServiceError(RuntimeError):
    """MetaService did not come up, or died, or would not stop; the message carries its output."""


def parse_conf(text: str) -> dict[str, str]:
    """The `key = value` settings of a memcache_hybrid .conf file (comments and blanks skipped)."""
    settings = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"line {number}: not `key = value`: {raw!r}")
        settings[key.strip()] = value.strip()
    return settings


def set_conf_values(text: str, values: Mapping[str, str]) -> str:
    """`text` with each key of `values` set: an active line is rewritten in place, a commented-out
    example line (`# key = ...`) is activated, and a key found nowhere is appended."""
    lines = text.splitlines()
    for key, value in values.items():
        active = [i for i, line in enumerate(lines) if line.strip().partition("=")[0].strip() == key]
        commented = [
            i for i, line in enumerate(lines) if line.strip().lstrip("#").strip().partition("=")[0].strip() == key
        ]
        targets = active or commented[:1]
        for index in targets:
            lines[index] = f"{key} = {value}"
        if not targets:
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct TCP ports nobody listens on right now (the kernel's picks, held together)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _unused in range(count)]
        for sock in socks:
            sock.bind((host, 0))
        return [sock.getsockname()[1] for sock in socks]


@dataclasses.dataclass
class MetaService:
    process: subprocess.Popen[bytes]
    config_path: Path
    output_dir: Path  # stdout.txt and stderr.txt of the process (removed when it stops)
    log_dir: Path  # where MetaService writes mmc-meta.log, from ock.mmc.log_path
    health: dict | None = None

    def diagnostics(self, limit: int = 4000) -> str:
        """The tail of stdout, stderr and each MetaService log file, for an error message."""
        parts = [f"config {self.config_path}:\n{_tail(self.config_path, limit)}"]
        for path in (self.output_dir / "stdout.txt", self.output_dir / "stderr.txt", *self._log_files()):
            parts.append(f"--- {path} ---\n{_tail(path, limit)}")
        return "\n".join(parts)

    def _log_files(self) -> list[Path]:
        return sorted(self.log_dir.glob("*.log")) if self.log_dir.is_dir() else []


def _tail(path: Path, limit: int) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"(unreadable: {exc})"
    text = data[-limit:].decode("utf-8", "replace")
    return ("..." if len(data) > limit else "") + text or "(empty)"


def http_get(url: str, timeout: float = 5) -> tuple[int, bytes]:
    """GET `url` over a keep-alive connection: (status, body).

    Not urllib: it sends `Connection: close`, and to such a request MetaService 1.3.0's HTTP
    server answers the headers (Content-Length: 118) but never the body, closing the socket
    ~6 s later, so urllib (and Ansible's uri module, which uses it) times out. curl works.
    """
    parts = urllib.parse.urlsplit(url)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(parts.hostname, parts.port, timeout=timeout)
    try:
        connection.request("GET", parts.path or "/")
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _get_health(url: str) -> object:
    status, body = http_get(url, timeout=2)
    if status != 200:
        raise ValueError(f"HTTP {status}: {body[:200]!r}")
    return json.loads(body)


def _stop(service: MetaService, grace: float) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; the process is reaped either way."""
    process = service.process
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)  # its own session: started with start_new_session
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


# memcache_hybrid allows one MetaService per machine (a lock file under /tmp): tests that start one
# take this lock first, so that pytest-xdist workers start theirs one after the other.
MACHINE_LOCK = Path(tempfile.gettempdir()) / "k3-tests-metaservice.lock"


@contextlib.contextmanager
def one_metaservice_at_a_time() -> Iterator[None]:
    with open(MACHINE_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def run_metaservice(
    config_path: str | os.PathLike[str],
    health_url: str,
    timeout: float = 60,
    *,
    python: str | os.PathLike[str] = SERVICES_PYTHON,
    stop_grace: float = 10,
    env: Mapping[str, str] | None = None,
) -> Iterator[MetaService]:
    """Start MetaService with `config_path`, wait for `health_url` to say "status": "ok", yield, stop.

    Raises MetaServiceError with the process's output and log files if it exits or does not
    answer within `timeout` seconds, or if it died while the caller used it.
    """
    with one_metaservice_at_a_time():
        yield from _run_metaservice(config_path, health_url, timeout, python=python, stop_grace=stop_grace, env=env)


def _run_metaservice(config_path, health_url, timeout, *, python, stop_grace, env):
    config_path = Path(config_path).resolve()
    settings = parse_conf(config_path.read_text(encoding="utf-8"))
    log_dir = Path(settings.get(LOG_PATH_KEY, DEFAULT_LOG_PATH)) / "logs"
    output_dir = Path(tempfile.mkdtemp(prefix="k3-metaservice-"))
    child_env = {**os.environ, **(env or {}), "MMC_META_CONFIG_PATH": str(config_path)}
    with open(output_dir / "stdout.txt", "wb") as out, open(output_dir / "stderr.txt", "wb") as err:
        process = subprocess.Popen(
            [str(python), "-c", META_MAIN],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=child_env,
            cwd=output_dir,
            start_new_session=True,
        )
    service = MetaService(process, config_path, output_dir, log_dir)
    try:
        deadline = time.monotonic() + timeout
        last_error = "no answer yet"
        while service.health is None:
            status = process.poll()
            if status is not None:
                raise MetaServiceError(
                    f"MetaService exited with status {status} before {health_url} answered"
                    f" (memcache_hybrid exits 0 on a bad config)\n{service.diagnostics()}"
                )
            if time.monotonic() > deadline:
                raise MetaServiceError(
                    f"MetaService did not answer {health_url} with status ok within {timeout:g} s"
                    f" (last: {last_error})\n{service.diagnostics()}"
                )
            try:
                answer = _get_health(health_url)
            except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, timeout, not 200/JSON
                last_error = f"{type(exc).__name__}: {exc}"
            else:
                if isinstance(answer, dict) and answer.get("status") == "ok":
                    service.health = answer
                    break
                last_error = f"answered {answer!r}"
            time.sleep(0.2)
        yield service
        status = process.poll()
        if status is not None:
            raise MetaServiceError(f"MetaService died (status {status}) while in use\n{service.diagnostics()}")
    except Exception as exc:
        if not isinstance(exc, MetaServiceError):  # the caller's failure: add what the service said
            exc.add_note(f"MetaService output:\n{service.diagnostics()}")
        raise
    finally:
        _stop(service, stop_grace)
        shutil.rmtree(output_dir, ignore_errors=True)
