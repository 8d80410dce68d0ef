"""The status report (plugin_utils/operations/_status.py) and what service_status reads on a host (service_probe.py)."""

from __future__ import annotations

import grp
import http.server
import json
import os
import stat
import threading
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from conftest import example_plan

from ansible_collections.kimi_k3.serving.plugins.module_utils import service_probe
from ansible_collections.kimi_k3.serving.plugins.modules import service_status
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _status as status
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _units as units


def healthy(name, unit, **over):
    report = {
        "name": name,
        "unit": unit,
        "active": "active/running",
        "restarts": 0,
        "pid": 4242,
        "health": 200,
        "has_health": True,
        "argv_matches": True,
        "reload_pending": False,
        "version": "0.32.0",
    }
    report.update(over)
    return report


def all_healthy(plan):
    return {
        host: {"services": [healthy(s["name"], s["unit"]) for s in data["services"]], "drift": [], "unplanned": []}
        for host, data in plan["hosts"].items()
    }


PLAN = example_plan("nvidia-pd-nixl")


def test_a_healthy_deployment_has_a_row_per_planned_service_and_no_problem():
    out = status.report(PLAN, all_healthy(PLAN))
    planned = sum(len(d["services"]) for d in PLAN["hosts"].values())
    assert len(out["rows"]) == planned > 2
    assert out["problems"] == []
    lines = out["table"].splitlines()
    assert lines[0].split() == list(status.COLUMNS)
    # Fixed width: every row's VERSION column starts where the header's does.
    at = lines[0].index("VERSION")
    assert all(line[at:].startswith("0.32.0") for line in lines[1:])


def test_each_kind_of_problem_names_host_and_service():
    host = sorted(PLAN["hosts"])[0]
    svc = PLAN["hosts"][host]["services"][0]
    cases = {
        "active": ({"active": "failed/failed"}, "unit %s is failed/failed" % svc["unit"]),
        "health": ({"health": None}, "health URL answers none"),
        "unhealthy": ({"health": 503}, "health URL answers 503"),
        "argv": ({"argv_matches": False}, "the running argv is not the plan's"),
        "reload": ({"reload_pending": True}, "changed on disk and was not reloaded"),
    }
    for over, words in cases.values():
        gathered = all_healthy(PLAN)
        gathered[host]["services"][0].update(over)
        problems = status.report(PLAN, gathered)["problems"]
        assert len(problems) == 1 and problems[0].startswith("%s/%s: " % (host, svc["name"])), problems
        assert words in problems[0]


def test_the_release_column_and_a_restart_still_owed():
    host = sorted(PLAN["hosts"])[0]
    svc = PLAN["hosts"][host]["services"][0]
    gathered = all_healthy(PLAN)
    gathered[host]["services"][0].update(release="a1b2c3d4e5f6", release_pending=False)
    out = status.report(PLAN, gathered)
    column = status.COLUMNS.index("RELEASE")
    row = next(r for r in out["rows"] if r[:2] == [host, svc["name"]])
    assert row[column] == "a1b2c3d4e5f6" and out["problems"] == []
    # A service without a kept release shows "-".
    assert {r[column] for r in out["rows"] if r[:2] != [host, svc["name"]]} == {"-"}
    gathered[host]["services"][0]["release_pending"] = True
    out = status.report(PLAN, gathered)
    row = next(r for r in out["rows"] if r[:2] == [host, svc["name"]])
    assert row[column] == "a1b2c3d4e5f6(restart-owed)"
    assert out["problems"] == [
        "%s/%s: it still runs an earlier release (its files changed after it started): upgrade.yml rolls it"
        % (host, svc["name"])
    ]


def test_drift_unplanned_units_and_unreachable_hosts_are_problems():
    hosts = sorted(PLAN["hosts"])
    gathered = all_healthy(PLAN)
    first = PLAN["hosts"][hosts[0]]["services"][0]["name"]
    gathered[hosts[0]]["drift"] = [first]
    gathered[hosts[1]]["unplanned"] = ["k3-old-decode"]
    del gathered[hosts[2]]
    out = status.report(PLAN, gathered)
    text = "\n".join(out["problems"])
    assert "%s/%s: its unit, environment or configuration files differ from the plan" % (hosts[0], first) in text
    assert "--limit %s" % hosts[0] in text
    assert "%s: unit k3-old-decode is the collection's but not in the plan" % hosts[1] in text
    assert "%s: host not reached" % hosts[2] in text
    assert [r for r in out["rows"] if r[2] == "k3-old-decode"][0][3] == "unplanned"
    assert len(out["problems"]) == 2 + len(PLAN["hosts"][hosts[2]]["services"])


def test_a_headless_follower_has_no_health_to_fail():
    gathered = all_healthy(PLAN)
    host = sorted(PLAN["hosts"])[0]
    gathered[host]["services"][0].update(health=None, has_health=False)
    out = status.report(PLAN, gathered)
    assert out["problems"] == []
    assert [r for r in out["rows"] if r[0] == host][0][4] == "n/a"


def test_limit_reports_only_the_given_hosts():
    hosts = sorted(PLAN["hosts"])
    gathered = {hosts[0]: all_healthy(PLAN)[hosts[0]]}
    out = status.report(PLAN, gathered, hosts=[hosts[0]])
    assert {r[0] for r in out["rows"]} == {hosts[0]}
    assert out["problems"] == []


@pytest.mark.parametrize(
    ("running", "planned", "runtime", "expected"),
    [
        # A console script run by the virtualenv's interpreter (what /proc shows for vllm serve).
        (
            ["/v/bin/python", "/v/bin/vllm", "serve", "/m", "--port", "8200"],
            ["vllm", "serve", "/m", "--port", "8200"],
            "host",
            True,
        ),
        (
            ["/v/bin/python", "/v/bin/vllm", "serve", "/m", "--port", "8201"],
            ["vllm", "serve", "/m", "--port", "8200"],
            "host",
            False,
        ),
        (["/v/bin/python", "/v/bin/vllm", "serve", "/m"], ["vllm", "serve", "/m", "--port", "8200"], "host", False),
        (["/usr/bin/docker", "run", "--rm", "img:1", "serve", "/m"], ["vllm", "serve", "/m"], "docker", True),
        (["/usr/bin/docker", "run", "--rm", "img:1", "serve", "/x"], ["vllm", "serve", "/m"], "docker", False),
        ([], ["vllm", "serve"], "host", False),
    ],
)
def test_running_argv_against_the_plan(running, planned, runtime, expected):
    assert service_probe.argv_runs(running, planned, runtime) is expected


def test_versions_are_read_from_the_virtualenv_without_importing(tmp_path):
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    (site / "vllm-0.32.0.dist-info").mkdir(parents=True)
    (site / "vllm_router-0.1.17.dist-info").mkdir()
    (tmp_path / "venv" / "bin").mkdir()
    bin_dir = str(tmp_path / "venv" / "bin")
    assert service_probe.distribution_version([bin_dir], "vllm") == "0.32.0"
    assert service_probe.distribution_version(["/nonexistent/bin", bin_dir], "vllm-router") == "0.1.17"
    assert service_probe.distribution_version([bin_dir], "memcache_hybrid") is None


def test_process_argv_of_this_process_and_of_none():
    assert (
        service_probe.process_argv(os.getpid())[0].endswith("python")
        or "python" in service_probe.process_argv(os.getpid())[0]
    )
    assert service_probe.process_argv(0) == []


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (http.server's name)
        code = 200 if self.headers.get("Authorization") == "Bearer k" else 401
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_http_status_is_the_answer_or_none():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = "http://127.0.0.1:%d/health" % server.server_address[1]
        assert service_probe.http_status(url, "k") == 200
        assert service_probe.http_status(url) == 401
    finally:
        server.shutdown()
        server.server_close()
    assert service_probe.http_status(url) is None


def test_unplanned_units_are_only_the_collections(tmp_path):
    (tmp_path / "k3-decode.service").write_text("# Managed by kimi_k3.serving: decode\n[Unit]\n")
    (tmp_path / "k3-old.service").write_text("# Managed by kimi_k3.serving: old\n[Unit]\n")
    (tmp_path / "k3-firewall.service").write_text("# Managed by kimi_k3.serving: the deployment's table\n")
    (tmp_path / "k3-site.service").write_text("[Unit]\nDescription=the site's own\n")
    (tmp_path / "k3-old.timer").write_text("# Managed by kimi_k3.serving\n")
    found = service_status.unplanned_units(str(tmp_path), {"k3-decode"}, {"k3-firewall"})
    assert found == ["k3-old"]


def test_teardown_paths_and_status_targets_from_a_real_plan():
    plan = example_plan("nvidia-pd-nixl")
    host = sorted(plan["hosts"])[0]
    services = plan["hosts"][host]["services"]
    paths = units.service_paths(services, "/etc/kimi-k3", "/var/lib/kimi-k3")
    for svc in services:
        assert "/etc/systemd/system/%s.service" % svc["unit"] in paths
        assert "/etc/kimi-k3/%s.env" % svc["name"] in paths
        assert "/var/lib/kimi-k3/%s" % svc["name"] in paths
        for item in svc.get("files") or []:
            assert item["path"] in paths
    assert paths == sorted(set(paths))
    kept = units.service_paths(services, "/etc/kimi-k3", "/var/lib/kimi-k3", releases_dir="/var/lib/kimi-k3/releases")
    assert set(kept) - set(paths) == {"/var/lib/kimi-k3/releases/%s" % svc["name"] for svc in services}
    targets = units.status_targets(services)
    assert all("env" not in t and t["argv"] == s["argv"] for t, s in zip(targets, services, strict=True))


def test_teardown_removes_the_folders_a_program_writes():
    plan = example_plan("a3-pd-8p8d")
    meta = [s for d in plan["hosts"].values() for s in d["services"] if s["kind"] == "metaservice"]
    assert meta and meta[0]["writes"] == ["/var/log/memcache_hybrid", "/var/log/memfabric_hybrid"]
    paths = units.service_paths(meta, "/etc/kimi-k3", "/var/lib/kimi-k3")
    assert "/var/log/memcache_hybrid" in paths and "/var/log/memfabric_hybrid" in paths


def test_bundle_snapshots_engine_metrics_and_the_routers_prometheus_port():
    plan = example_plan("nvidia-pd-nixl")
    services = [s for d in plan["hosts"].values() for s in d["services"]]
    for data in plan["hosts"].values():  # one host's services: the names are unique there
        urls = {u["name"]: u["url"] for u in units.bundle_urls(data["services"])}
        for svc in data["services"]:
            if svc["kind"] == "vllm" and svc.get("url"):
                assert urls["%s-metrics.txt" % svc["name"]] == svc["url"] + "/metrics"
            if svc["kind"] == "router":
                assert urls["%s-metrics.txt" % svc["name"]] == "http://127.0.0.1:29000/metrics"
    router = next(s for s in services if s["kind"] == "router")
    moved = dict(router, argv=router["argv"] + ["--prometheus-port", "9100", "--prometheus-host", "0.0.0.0"])
    assert {u["url"] for u in units.bundle_urls([moved])} >= {"http://127.0.0.1:9100/metrics"}
    files = units.bundle_files(services, "/etc/kimi-k3")
    assert {f["kind"] for f in files if f["path"].endswith(".env")} == {"env"}
    assert all(f["kind"] == "plain" for f in files if f["path"].endswith(".service"))


STATUS_KEY = "sk-k3-status-drift-9f8e7d"


def status_module(capsys, args):
    with patch_module_args(dict(args, _ansible_check_mode=False)), pytest.raises(SystemExit):
        service_status.main()
    out = capsys.readouterr().out
    return out, json.loads(out)


def test_the_report_names_the_services_whose_files_differ_and_writes_nothing(tmp_path, capsys):
    """The comparison status.yml makes in the report's own call: a file edited by hand, a mode changed,
    a file missing; nothing written, a key's file never shown."""
    conf = tmp_path / "conf"
    conf.mkdir()
    gid = os.getgid()
    group = grp.getgrgid(gid).gr_name if gid else "root"
    files = [
        {"path": str(conf / "engine.yaml"), "content": "port: 8000\n", "service": "engine", "group": group},
        {
            "path": str(conf / "engine.env"),
            "content": "KEY=%s\n" % STATUS_KEY,
            "mode": "0600",
            "service": "engine",
            "secret": True,
            "group": group,
        },
        {"path": str(conf / "router.yaml"), "content": "a: 1\n", "service": "router", "group": group},
    ]
    for entry in files:
        path = Path(entry["path"])
        path.write_text(entry["content"])
        path.chmod(int(entry.get("mode", "0644"), 8))
    args = {"services": [], "files": files, "secrets": [STATUS_KEY]}
    raw, same = status_module(capsys, args)
    assert same["drift"] == [] and not same["changed"]
    (conf / "engine.env").write_text("KEY=%s\nVLLM_LOGGING_LEVEL=DEBUG\n" % STATUS_KEY)
    raw, edited = status_module(capsys, args)
    assert edited["drift"] == ["engine"] and STATUS_KEY not in raw
    (conf / "engine.env").write_text("KEY=%s\n" % STATUS_KEY)
    (conf / "router.yaml").chmod(0o666)
    (conf / "engine.yaml").unlink()
    _raw, both = status_module(capsys, args)
    assert both["drift"] == ["engine", "router"]
    # Only compared: nothing written back.
    assert not (conf / "engine.yaml").exists() and stat.S_IMODE((conf / "router.yaml").stat().st_mode) == 0o666
    # Without files, no comparison.
    _raw, none = status_module(capsys, {"services": []})
    assert none["drift"] == []
