"""Contract: the mmc-meta.conf the planner renders is loaded by the real memcache MetaService.

The 8P8D profile is planned for one local host (loopback is allowed for a
single-host deployment), the MetaService is started with the plan's own argv
and environment (MMC_META_CONFIG_PATH pointing at the rendered file), and must
answer /health with status ok. The prefill engines' mmc-local.conf must point
at it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

import pytest
from conftest import ROOT, skip_or_fail
from metaservice import http_get, one_metaservice_at_a_time, parse_conf

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import build_plan

SERVICES_BIN = ROOT / ".venv" / "services" / "bin"


@pytest.fixture(autouse=True)
def _services_venv():
    if not (SERVICES_BIN / "python").exists():
        skip_or_fail(".venv/services is missing: run `make venv-vllm`")


def free_ports(n):
    import socket

    socks = [socket.socket() for _unused in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def local_plan(tmp_path):
    meta, store, metrics = free_ports(3)
    hv = {
        "ansible_host": "127.0.0.1",
        "k3_nic": "lo",  # the engines' socket-interface variables need it
        "k3_profile": "ascend-a3-pd-8p8d",
        "k3_config_dir": str(tmp_path / "etc"),
        "k3_mmc_log_path": str(tmp_path / "log"),
        "k3_metaservice_port": meta,
        "k3_config_store_port": store,
        "k3_metaservice_metrics_port": metrics,
    }
    inv = {"groups": {g: ["local"] for g in ("router", "metaservice", "prefill", "decode")}, "hostvars": {"local": hv}}
    return build_plan(inv), (meta, store, metrics)


def test_rendered_config_runs_the_real_metaservice(tmp_path):
    plan, (meta_port, store_port, metrics_port) = local_plan(tmp_path)
    services = {s["name"]: s for s in plan["hosts"]["local"]["services"]}
    meta = services["metaservice"]
    for f in meta["files"]:
        os.makedirs(os.path.dirname(f["path"]), exist_ok=True)
        with open(f["path"], "w", encoding="utf-8") as handle:
            handle.write(f["content"])
    conf = parse_conf(open(meta["env"]["MMC_META_CONFIG_PATH"], encoding="utf-8").read())
    assert conf["ock.mmc.meta_service_url"] == "tcp://127.0.0.1:%d" % meta_port
    # mmc-local.conf of the prefill engine points at the same MetaService.
    local = parse_conf(services["prefill"]["files"][0]["content"])
    assert local["ock.mmc.meta_service_url"] == conf["ock.mmc.meta_service_url"]
    assert local["ock.mmc.local_service.config_store_url"] == conf["ock.mmc.meta_service.config_store_url"]
    assert services["prefill"]["env"]["MMC_LOCAL_CONFIG_PATH"] == services["prefill"]["files"][0]["path"]

    env = dict(os.environ)
    env.update(meta["env"])
    env["PATH"] = "%s:%s" % (SERVICES_BIN, env["PATH"])
    with one_metaservice_at_a_time():
        run_rendered(meta, env, tmp_path)


def run_rendered(meta, env, tmp_path):
    proc = subprocess.Popen(
        meta["argv"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        answer = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                status, body = http_get(meta["health"]["url"], timeout=2)
                if status == 200:
                    answer = body
                    break
            except OSError:
                pass
            time.sleep(0.3)
        assert proc.poll() is None, "MetaService exited: %s" % proc.stdout.read().decode(errors="replace")
        assert answer is not None and b'"status":"ok"' in answer.replace(b" ", b""), answer
        logs = list((tmp_path / "log").rglob("*.log"))
        assert logs, "MetaService wrote no log under the planned ock.mmc.log_path"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
