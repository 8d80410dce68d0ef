"""Monitoring from the plan (plugins/plugin_utils/observability/_monitoring.py): targets, rules, dashboards.

The metric names are checked against what the pinned services expose: vLLM 0.32's /metrics as
recorded from the sandbox's prefill engine (tests/unit/fixtures/metrics/, with its source line),
and vllm-router's metric names as compiled into the installed binary (a counter such as
vllm_router_request_errors_total appears in /metrics only after its first error).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from conftest import ROOT, example_names, example_plan
from test_plan_schema import sandbox_plan

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _exporters as exporters
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _hardware_rules as hardware
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring as monitoring

FIXTURES = Path(__file__).parent / "fixtures" / "metrics"
ROUTER_SO = sorted((ROOT / ".venv" / "services").glob("lib/python3*/site-packages/vllm_router_rs*.so"))


def exposed(path):
    """The sample names of a Prometheus text exposition."""
    names = set()
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def test_sandbox_targets_are_every_api_server_the_router_and_the_metaservice():
    targets = monitoring.scrape_targets(sandbox_plan("sandbox-cpu"))
    got = sorted((t["job"], t["host"], t["service"], t["address"]) for t in targets)
    assert got == [
        ("metaservice", "k3-sb-front", "metaservice", "10.77.0.11:8088"),
        ("router", "k3-sb-front", "router", "127.0.0.1:29000"),
        ("vllm", "k3-sb-decode", "decode", "10.77.0.15:8200"),
        ("vllm", "k3-sb-dp0", "engine", "10.77.0.12:8000"),
        ("vllm", "k3-sb-prefill", "prefill", "10.77.0.14:8100"),
    ]
    # The headless follower k3-sb-dp1 serves no API: its node 0 reports for it.
    assert "k3-sb-dp1" not in {t["host"] for t in targets}


def test_a_router_on_its_default_loopback_listener_is_named_with_the_fix():
    problems = monitoring.unreachable_targets(monitoring.scrape_targets(sandbox_plan("sandbox-cpu")))
    assert problems == [
        "k3-sb-front/router: its metrics listen on 127.0.0.1 only (vllm-router's default): another host cannot "
        "scrape them. Fix: set k3_router_args: [{--prometheus-host: 10.77.0.11}] on it"
    ]


def test_a_router_with_a_prometheus_listener_is_scraped_there():
    plan = copy.deepcopy(sandbox_plan("sandbox-cpu"))
    router = plan["hosts"]["k3-sb-front"]["services"][1]
    assert router["kind"] == "router"
    router["argv"] += ["--prometheus-host", "0.0.0.0", "--prometheus-port=29100"]
    targets = [t for t in monitoring.scrape_targets(plan) if t["job"] == "router"]
    assert [t["address"] for t in targets] == ["10.77.0.11:29100"]
    assert monitoring.unreachable_targets(targets) == []


@pytest.mark.parametrize("name", example_names())
def test_every_example_has_one_target_per_api_server_with_the_rule_labels(name):
    plan = example_plan(name)
    targets = monitoring.scrape_targets(plan)
    api = [
        (host, s["name"])
        for host, data in plan["hosts"].items()
        for s in data["services"]
        if s["kind"] == "vllm" and s.get("serves_http")
    ]
    assert sorted((t["host"], t["service"]) for t in targets if t["job"] == "vllm") == sorted(api)
    assert len({t["address"] for t in targets}) == len(targets)
    for target in targets:
        assert set(target["labels"]) == {"k3_host", "k3_service", "k3_role", "k3_unit"}
        assert target["labels"]["k3_host"] == target["host"]


def test_file_sd_groups_by_job_with_the_profile_label_and_the_scheme_of_a_tls_engine():
    targets = monitoring.scrape_targets(sandbox_plan("sandbox-cpu"))
    targets[0] = dict(targets[0], scheme="https")
    groups = monitoring.file_sd(targets, profile="sandbox-cpu")
    assert set(groups) == {"vllm", "router", "metaservice", "node", "accelerator"}
    assert sum(len(g) for g in groups.values()) == len(targets)
    first = next(g for gs in groups.values() for g in gs if g["targets"] == [targets[0]["address"]])
    assert first["labels"]["__scheme__"] == "https"
    assert all(g["labels"]["k3_profile"] == "sandbox-cpu" for gs in groups.values() for g in gs)


def test_prometheus_config_reads_one_file_per_job_the_rules_and_the_alertmanager():
    config = monitoring.prometheus_config("/etc/prometheus/k3", ["/etc/prometheus/k3-rules.yml"], ["10.0.0.9:9093"])
    assert [j["job_name"] for j in config["scrape_configs"]] == [
        "k3-vllm",
        "k3-router",
        "k3-metaservice",
        "k3-node",
        "k3-accelerator",
    ]
    assert config["scrape_configs"][0]["file_sd_configs"] == [{"files": ["/etc/prometheus/k3/vllm.json"]}]
    assert config["rule_files"] == ["/etc/prometheus/k3-rules.yml"]
    assert config["alerting"]["alertmanagers"][0]["static_configs"] == [{"targets": ["10.0.0.9:9093"]}]
    assert "alerting" not in monitoring.prometheus_config("/t", [])


def test_the_rules_cover_what_an_operator_is_paged_for():
    rules = monitoring.alert_rules()["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == [
        "K3ServiceDown",
        "K3TimeToFirstTokenHigh",
        "K3InterTokenLatencyHigh",
        "K3KVCacheFull",
        "K3RequestsWaiting",
        "K3Preemptions",
        "K3RouterFailedRequests",
    ]
    for rule in rules:
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert "{{ $labels.k3_host }}" in rule["annotations"]["summary"]
        assert re.fullmatch(r"\d+[smh]", rule["for"])
    assert next(r for r in rules if r["alert"] == "K3KVCacheFull")["expr"].endswith("> 0.95")


def test_thresholds_change_the_rules_and_a_wrong_one_is_refused_by_name():
    rules = monitoring.alert_rules({"ttft_p99_seconds": 2, "window": "10m"})["groups"][0]["rules"]
    ttft = next(r for r in rules if r["alert"] == "K3TimeToFirstTokenHigh")
    assert ttft["expr"].endswith("[10m]))) > 2") and ttft["for"] == "10m"
    with pytest.raises(monitoring.MonitoringError, match="unknown threshold 'ttft'.*ttft_p99_seconds"):
        monitoring.alert_rules({"ttft": 1})
    with pytest.raises(monitoring.MonitoringError, match="kv_cache_usage must be a number of at least 0"):
        monitoring.alert_rules({"kv_cache_usage": "high"})
    with pytest.raises(monitoring.MonitoringError, match="window must be a duration"):
        monitoring.alert_rules({"window": 5})


def test_dashboards_have_their_panels_on_a_grid_and_a_datasource_variable():
    boards = monitoring.dashboards()
    assert sorted(boards) == ["kimi-k3-engines.json", "kimi-k3-hardware.json", "kimi-k3-router.json"]
    for board in boards.values():
        ids = [p["id"] for p in board["panels"]]
        assert ids == list(range(1, len(ids) + 1))
        cells = {(p["gridPos"]["x"], p["gridPos"]["y"]) for p in board["panels"]}
        assert len(cells) == len(board["panels"])  # no two panels on one place
        assert board["templating"]["list"][0]["name"] == "datasource"
        assert all(t["expr"] for p in board["panels"] for t in p["targets"])


def test_the_hardware_board_reads_the_exporters_real_names_per_host_and_device():
    """Each metric a hardware panel reads is on a recorded exporter page or read by a hardware alert
    (those are tested on recorded series), and each name pattern matches one of those; every panel
    keeps k3_host in its legend."""
    pages = Path(__file__).parent / "fixtures" / "exporters"
    known = set().union(*(exposed(page) for page in pages.glob("*.prom")))
    alerts = " ".join(r["expr"] for r in hardware.hardware_rules()["rules"])
    known |= set(re.findall(r"\b(?:DCGM_FI_[A-Z_]+|npu_chip_info_[a-z_]+|node_[a-z_]+)\b", alerts))
    # And the counters the collection asks dcgm-exporter for (the NVLink error counters among them).
    known |= {field for field, _type, _help in exporters.DCGM_COUNTERS}
    board = monitoring.dashboards()["kimi-k3-hardware.json"]
    names, patterns = set(), set()
    for panel in board["panels"]:
        for target in panel["targets"]:
            assert "k3_host" in target["legendFormat"], (panel["title"], target)
            expr = target["expr"]
            patterns |= set(re.findall(r'__name__=~"([^"]+)"', expr))
            names |= set(re.findall(r"\b(?:DCGM_FI_[A-Z_]+|npu_chip_info_[a-z_]+|node_[a-z_]+)\b", expr))
    assert len(names) >= 7, names
    assert names - known == set()
    # The AMD health pattern: read by the K3AmdGpuUnhealthy alert; the NVLink one: its four counters.
    for pattern in patterns:
        assert pattern in alerts or any(re.fullmatch(pattern, n) for n in known), pattern


def balanced(expr):
    depth = 0
    for char in expr:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def test_every_expression_is_named_and_balanced():
    exprs = monitoring.expressions(monitoring.alert_rules(), monitoring.dashboards())
    assert len(exprs) == len({where for where, _unused in exprs}) > 20
    assert all(balanced(expr) for _unused, expr in exprs), [e for e in exprs if not balanced(e[1])]


def test_the_expressions_read_only_the_declared_metrics():
    used = monitoring.used_metrics(monitoring.expressions(monitoring.alert_rules(), monitoring.dashboards()))
    assert used <= set(monitoring.VLLM_METRICS) | set(monitoring.ROUTER_METRICS), used
    assert used >= {"vllm:kv_cache_usage_perc", "vllm:time_to_first_token_seconds_bucket"}


def test_the_declared_vllm_metrics_are_the_pinned_vllms():
    names = exposed(FIXTURES / "vllm-0.32.0-cpu.txt")
    assert set(monitoring.VLLM_METRICS) <= names, set(monitoring.VLLM_METRICS) - names


@pytest.mark.skipif(not ROUTER_SO, reason="the services venv (make venv-services) is not installed")
def test_the_declared_router_metrics_are_in_the_installed_vllm_router():
    compiled = ROUTER_SO[0].read_bytes()
    # The binary's strings run together (no separator): a name is there when its bytes are.
    missing = [name for name in monitoring.ROUTER_METRICS if name.removesuffix("_bucket").encode() not in compiled]
    assert missing == []
    recorded = exposed(FIXTURES / "vllm-router-0.1.17.txt")
    assert {"vllm_router_worker_health", "vllm_router_processed_requests_total"} <= recorded
    # Plain P/D mode after refused requests: the per-worker error counters of the rule and panel.
    plain_pd = exposed(FIXTURES / "vllm-router-0.1.17-pd.txt")
    assert {"vllm_router_pd_prefill_errors_total", "vllm_router_pd_decode_errors_total"} <= plain_pd
    assert "vllm_router_worker_health" in plain_pd and "vllm_router_active_workers" not in plain_pd


def active_target(job, host, service, health, error=""):
    """One entry of Prometheus' /api/v1/targets activeTargets, as Prometheus 2.42 returns it."""
    return {
        "labels": {"job": job, "k3_host": host, "k3_service": service, "instance": "x"},
        "health": health,
        "lastError": error,
    }


def test_down_targets_names_each_planned_target_that_is_missing_or_not_up():
    targets = monitoring.scrape_targets(sandbox_plan("sandbox-cpu"))
    up = [active_target("k3-" + t["job"], t["host"], t["service"], "up") for t in targets]
    assert monitoring.down_targets(targets, up) == []
    # One down with its scrape error, one not discovered yet, and one of another job that is not planned.
    others = [e for e in up if e["labels"]["k3_service"] not in ("decode", "metaservice")]
    others += [
        active_target(
            "k3-vllm", "k3-sb-decode", "decode", "down", 'Get "http://10.77.0.15:8200/metrics": connection refused'
        ),
        active_target("node", "k3-sb-front", "node-exporter", "up"),
    ]
    # In the plan's host order.
    assert monitoring.down_targets(targets, others) == [
        "k3-sb-front/metaservice (http://10.77.0.11:8088/metrics): not among Prometheus' targets yet "
        "(job k3-metaservice)",
        'k3-sb-decode/decode (http://10.77.0.15:8200/metrics): down (Get "http://10.77.0.15:8200/metrics": '
        "connection refused)",
    ]
    # Health "unknown" (discovered, not scraped yet) is not up either.
    pending = [active_target("k3-" + t["job"], t["host"], t["service"], "unknown") for t in targets[:1]]
    assert monitoring.down_targets(targets[:1], pending) == [
        "%s/%s (http://%s/metrics): unknown (no scrape yet)"
        % (targets[0]["host"], targets[0]["service"], targets[0]["address"])
    ]
