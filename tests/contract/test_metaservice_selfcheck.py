"""Self-check of tests/contract/metaservice.py against the REAL memcache_hybrid MetaService.

The config is the package's own example mmc-meta.conf (memcache_hybrid/config/ in
.venv/services), with free loopback ports and a temporary log path. Proves the helper
sees /health, stops and reaps the service, and fails fast with the service's own reason
on a broken value instead of hanging.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import skip_or_fail
from metaservice import (
    SERVICES_PYTHON,
    MetaServiceError,
    free_ports,
    http_get,
    parse_conf,
    run_metaservice,
    set_conf_values,
)

EXAMPLE_KEYS = {
    "ock.mmc.meta_service_url",
    "ock.mmc.meta_service.config_store_url",
    "ock.mmc.meta_service.metrics_url",
    "ock.mmc.log_level",
}


@pytest.fixture(scope="module")
def example_conf() -> str:
    """The text of the example mmc-meta.conf shipped in the installed memcache_hybrid package."""
    if not SERVICES_PYTHON.exists():
        skip_or_fail(f"{SERVICES_PYTHON} does not exist: build it with `tools/venvs.sh services`")
    where = subprocess.run(
        [
            str(SERVICES_PYTHON),
            "-c",
            "import importlib.util; print(importlib.util.find_spec('memcache_hybrid').submodule_search_locations[0])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return (Path(where) / "config" / "mmc-meta.conf").read_text(encoding="utf-8")


def adapted_conf(example: str, folder: Path, **overrides: str) -> tuple[Path, dict[str, str], int]:
    """The example with free ports and a log path under `folder`; returns (path, settings, metrics port)."""
    meta, store, metrics = free_ports(3)
    values = {
        "ock.mmc.meta_service_url": f"tcp://127.0.0.1:{meta}",
        "ock.mmc.meta_service.config_store_url": f"tcp://127.0.0.1:{store}",
        "ock.mmc.meta_service.metrics_url": f"http://127.0.0.1:{metrics}",
        "ock.mmc.log_path": str(folder / "mmc-logs"),
    }
    values.update(overrides)
    path = folder / "mmc-meta.conf"
    path.write_text(set_conf_values(example, values), encoding="utf-8")
    return path, parse_conf(path.read_text(encoding="utf-8")), metrics


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_example_conf_has_the_documented_keys(example_conf):
    assert set(parse_conf(example_conf)) == EXAMPLE_KEYS


def test_set_conf_values_rewrites_activates_and_appends(example_conf):
    text = set_conf_values(
        example_conf,
        {
            "ock.mmc.log_level": "warn",  # active line
            "ock.mmc.meta_service.lru_shard_count": "8",  # commented-out example line
            "ock.mmc.log_path": "/tmp/x",  # not in the file
        },
    )
    settings = parse_conf(text)
    assert settings["ock.mmc.log_level"] == "warn"
    assert settings["ock.mmc.meta_service.lru_shard_count"] == "8"
    assert settings["ock.mmc.log_path"] == "/tmp/x"
    assert text.count("ock.mmc.meta_service.lru_shard_count") == 1
    assert text.count("ock.mmc.log_level") == 1


def test_parse_conf_refuses_a_line_without_equals():
    with pytest.raises(ValueError, match="line 2"):
        parse_conf("# comment\nock.mmc.log_level info\n")


def test_metaservice_answers_health_and_stops(example_conf, tmp_path):
    conf, settings, metrics_port = adapted_conf(example_conf, tmp_path)
    base = settings["ock.mmc.meta_service.metrics_url"]
    with run_metaservice(conf, f"{base}/health", timeout=60) as meta:
        assert meta.health["status"] == "ok"
        assert meta.health["service_ready"] is True
        status, body = http_get(f"{base}/metrics")
        assert status == 200
        assert b"memcache_total_capacity_bytes" in body
        meta_port = int(settings["ock.mmc.meta_service_url"].rsplit(":", 1)[1])
        socket.create_connection(("127.0.0.1", meta_port), timeout=5).close()  # the meta service listens
        process = meta.process
    assert process.returncode is not None  # stopped and reaped
    assert port_is_free(metrics_port)
    log = tmp_path / "mmc-logs" / "logs" / "mmc-meta.log"  # ock.mmc.log_path moved it out of /var/log
    assert f"HTTP server started on 127.0.0.1:{metrics_port}" in log.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("ock.mmc.log_level", "loud", "Invalid value for <ock.mmc.log_level>"),
        ("ock.mmc.meta_service_url", "tcp://127.0.0.1:99999", "Failed to parse URL: tcp://127.0.0.1:99999"),
    ],
)
def test_broken_value_fails_fast_with_the_reason(example_conf, tmp_path, key, value, reason):
    conf, settings, _unused = adapted_conf(example_conf, tmp_path, **{key: value})
    health = settings["ock.mmc.meta_service.metrics_url"] + "/health"
    started = time.monotonic()
    with pytest.raises(MetaServiceError) as failure, run_metaservice(conf, health, timeout=60):
        pytest.fail("a broken config must not reach the body")
    assert time.monotonic() - started < 30
    message = str(failure.value)
    assert "exited with status" in message
    assert reason in message


def test_no_health_answer_times_out_and_stops_the_service(example_conf, tmp_path):
    conf, _unused, metrics_port = adapted_conf(example_conf, tmp_path)
    wrong = f"http://127.0.0.1:{free_ports(1)[0]}/health"
    with pytest.raises(MetaServiceError, match="did not answer .* within 3 s"), run_metaservice(conf, wrong, timeout=3):
        pytest.fail("no /health answer must not reach the body")
    assert port_is_free(metrics_port)  # the running service was stopped after the timeout


def test_a_failure_in_the_body_carries_the_service_output(example_conf, tmp_path):
    conf, settings, _unused = adapted_conf(example_conf, tmp_path)
    health = settings["ock.mmc.meta_service.metrics_url"] + "/health"
    with pytest.raises(KeyError) as failure, run_metaservice(conf, health) as meta:
        assert meta.health["status"] == "ok"
        raise KeyError("caller failed")
    notes = "\n".join(getattr(failure.value, "__notes__", []))
    assert "MetaService output:" in notes
    assert "mmc-meta.log" in notes
