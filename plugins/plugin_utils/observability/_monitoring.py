# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Monitoring from the plan: what Prometheus scrapes, the alert rules and the dashboards.

Pure functions over a plan (plan.json's mapping); no Ansible imports. The metric names are those
the pinned vLLM (0.32) and vllm-router (0.1.17) expose (``VLLM_METRICS``, ``ROUTER_METRICS``; a
test reads them from the real services of the sandbox).

- ``scrape_targets(plan)``: one target per service that serves metrics: every vLLM API server
  (``/metrics`` on its HTTP port; a headless follower has none, its node 0 reports for it), the
  router's Prometheus listener (``--prometheus-host``/``--prometheus-port``, vllm-router's default
  127.0.0.1:29000 when the plan names none), the MetaService's metrics port, the exporters (the
  node exporter in job ``node``, the accelerators' in job ``accelerator``). Each carries the labels
  the rules and dashboards group by: ``k3_host``, ``k3_service``, ``k3_role``, ``k3_unit``.
- ``unreachable_targets(targets)``: those that listen on the loopback only (another host cannot
  scrape them), as problems naming the service and the fix.
- ``file_sd(targets)``: Prometheus' file-based service discovery groups, one file per job.
- ``prometheus_config(...)``: a prometheus.yml that reads them.
- ``alert_rules(thresholds)``: the rule groups: the serving's (a service down, p99 TTFT and ITL,
  KV cache above its limit, requests waiting, preemptions, the router's failed requests) and the
  hardware's (accelerators, RDMA ports, disks: ``_hardware_rules.py``).
- ``dashboards()``: Grafana dashboards (JSON) for the engines, the router and the hardware
  (accelerators, RDMA ports, disks: ``_hardware_board.py``).
- ``expressions(rules, boards)``: every PromQL expression of both, named by where it is.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _hardware_board as hardware_board
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _hardware_rules as hardware
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _profiles as profiles

JOBS = ("vllm", "router", "metaservice", "node", "accelerator")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
ROUTER_DEFAULT_HOST = "127.0.0.1"
ROUTER_DEFAULT_PORT = 29000

VLLM_METRICS = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:time_to_first_token_seconds_bucket",
    "vllm:inter_token_latency_seconds_bucket",
    "vllm:e2e_request_latency_seconds_bucket",
    "vllm:request_queue_time_seconds_bucket",
)
# Each counts failed requests its own way: by route and error type (regular mode), by P/D error
# type, by prefill or decode worker (plain P/D mode counts only these two). Each appears in
# /metrics only after its first error. No two of them share a label set, so one selector can
# take their rates together.
ROUTER_ERROR_COUNTERS = (
    "vllm_router_request_errors_total",
    "vllm_router_pd_errors_total",
    "vllm_router_pd_prefill_errors_total",
    "vllm_router_pd_decode_errors_total",
)
ROUTER_ERRORS = '{__name__=~"%s"}' % "|".join(ROUTER_ERROR_COUNTERS)
ROUTER_METRICS = (
    "vllm_router_worker_health",
    "vllm_router_processed_requests_total",
    "vllm_router_pd_requests_total",
    "vllm_router_pd_request_duration_seconds_bucket",
) + ROUTER_ERROR_COUNTERS

DEFAULT_THRESHOLDS = {
    "down_for": "1m",
    "ttft_p99_seconds": 10.0,
    "itl_p99_seconds": 0.5,
    "kv_cache_usage": 0.95,
    "waiting_requests": 0,
    "waiting_for": "5m",
    "preemptions_per_second": 0.0,
    "router_errors_per_second": 0.0,
    "disk_free_ratio": 0.1,
    "window": "5m",
}

_METRIC = re.compile(r"(vllm:[a-z0-9_]+|vllm_router_[a-z0-9_]+)")


class MonitoringError(ValueError):
    """A threshold that cannot be a rule's."""


def _labels(host, service):
    return {
        "k3_host": host,
        "k3_service": service["name"],
        "k3_role": service.get("role") or service["kind"],
        "k3_unit": service["unit"],
    }


def _router_listener(service):
    """Where the router's Prometheus listener is: its argv's --prometheus-host/--prometheus-port."""
    flags = profiles.argv_flags(service.get("argv") or [])
    host = flags.get(profiles.flag_key("--prometheus-host"), ROUTER_DEFAULT_HOST)
    port = int(flags.get(profiles.flag_key("--prometheus-port"), ROUTER_DEFAULT_PORT))
    return host, port


def scrape_targets(plan):
    """Every metrics endpoint of the plan: [{job, host, service, address, scheme, path, labels}]."""
    targets = []
    for host, data in plan["hosts"].items():
        ip = data["ip"]
        for service in data["services"]:
            kind = service["kind"]
            entry = None
            if kind == "vllm" and service.get("serves_http") and service.get("url"):
                url = urlparse(service["url"])
                entry = {"job": "vllm", "address": url.netloc, "scheme": url.scheme}
            elif kind == "router":
                bind, port = _router_listener(service)
                address = "%s:%d" % (bind if bind in LOOPBACK else ip, port)
                entry = {"job": "router", "address": address, "scheme": "http", "bind": bind}
            elif kind == "metaservice":
                port = next((p["port"] for p in service.get("ports", []) if p["name"] == "metrics"), None)
                if port:
                    entry = {"job": "metaservice", "address": "%s:%d" % (ip, port), "scheme": "http"}
            elif kind == "exporter":
                address = urlparse(service["url"]).netloc
                entry = {"job": service["exporter"]["job"], "address": address, "scheme": "http"}
            if entry is None:
                continue
            entry.update(host=host, ip=ip, service=service["name"], path="/metrics", labels=_labels(host, service))
            entry.setdefault("bind", None)
            targets.append(entry)
    return targets


def unreachable_targets(targets):
    """Problems for the targets another host cannot scrape (a listener on the loopback only)."""
    problems = []
    for target in targets:
        if target["bind"] in LOOPBACK:
            problems.append(
                "%s/%s: its metrics listen on %s only (vllm-router's default): another host cannot scrape "
                "them. Fix: set k3_router_args: [{--prometheus-host: %s}] on it"
                % (target["host"], target["service"], target["bind"], target["ip"])
            )
    return problems


def file_sd(targets, profile=None):
    """{job: [file_sd group]}: one group per target, its labels those of the rules and dashboards."""
    out = {job: [] for job in JOBS}
    for target in targets:
        labels = dict(target["labels"])
        if profile:
            labels["k3_profile"] = profile
        if target["scheme"] != "http":
            labels["__scheme__"] = target["scheme"]
        out[target["job"]].append({"targets": [target["address"]], "labels": labels})
    return out


def down_targets(targets, active):
    """Problems for the planned targets Prometheus does not scrape successfully.

    ``active``: the ``activeTargets`` of Prometheus' ``/api/v1/targets``. A planned target is
    matched by its labels (k3_host, k3_service, job); one that is missing (the targets file not
    read yet) or whose health is not "up" is named with Prometheus' last error.
    """
    seen = {}
    for entry in active or []:
        labels = entry.get("labels") or {}
        seen[(labels.get("job"), labels.get("k3_host"), labels.get("k3_service"))] = entry
    problems = []
    for target in targets:
        key = ("k3-%s" % target["job"], target["host"], target["service"])
        entry = seen.get(key)
        where = "%s/%s (%s://%s%s)" % (
            target["host"],
            target["service"],
            target["scheme"],
            target["address"],
            target["path"],
        )
        if entry is None:
            problems.append("%s: not among Prometheus' targets yet (job %s)" % (where, key[0]))
        elif entry.get("health") != "up":
            error = entry.get("lastError") or "no scrape yet"
            problems.append("%s: %s (%s)" % (where, entry.get("health") or "unknown", error))
    return problems


def prometheus_config(
    targets_dir, rules_files, alertmanagers=(), scrape_interval="15s", ca_file=None, alertmanager_client=None
):
    """A prometheus.yml reading the file_sd files of ``targets_dir`` (one per job) and the rules.

    ``alertmanager_client``: how to reach the Alertmanagers (basic auth, https), when they are
    behind credentials (:func:`._monitoring_web.alertmanager_client`).
    """
    jobs = []
    for job in JOBS:
        config = {
            "job_name": "k3-%s" % job,
            "metrics_path": "/metrics",
            "file_sd_configs": [{"files": ["%s/%s.json" % (targets_dir.rstrip("/"), job)]}],
        }
        if ca_file and job == "vllm":
            config["tls_config"] = {"ca_file": ca_file}
        jobs.append(config)
    config = {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
        "rule_files": list(rules_files),
        "scrape_configs": jobs,
    }
    if alertmanagers:
        managers = dict(alertmanager_client or {})
        managers["static_configs"] = [{"targets": list(alertmanagers)}]
        config["alerting"] = {"alertmanagers": [managers]}
    return config


def _thresholds(overrides):
    values = dict(DEFAULT_THRESHOLDS)
    for key, value in (overrides or {}).items():
        if key not in DEFAULT_THRESHOLDS:
            raise MonitoringError(
                "unknown threshold %r: the thresholds are %s" % (key, ", ".join(sorted(DEFAULT_THRESHOLDS)))
            )
        default = DEFAULT_THRESHOLDS[key]
        if isinstance(default, str):
            if not isinstance(value, str) or not re.fullmatch(r"\d+[smh]", value):
                raise MonitoringError("threshold %s must be a duration such as 5m, got %r" % (key, value))
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise MonitoringError("threshold %s must be a number of at least 0, got %r" % (key, value))
        values[key] = value
    return values


def _quantile(metric, window, by="k3_host, k3_service", q=0.99):
    return "histogram_quantile(%s, sum by (le, %s) (rate(%s[%s])))" % (q, by, metric, window)


def alert_rules(thresholds=None):
    """The rule groups of rules.yml ({"groups": [...]})."""
    t = _thresholds(thresholds)
    w = t["window"]
    where = "{{ $labels.k3_service }} on {{ $labels.k3_host }}"
    rules = [
        {
            "alert": "K3ServiceDown",
            "expr": 'up{job=~"k3-.*"} == 0',
            "for": t["down_for"],
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "%s is down" % where,
                "description": "Prometheus cannot scrape %s ({{ $labels.instance }}, unit {{ $labels.k3_unit }})."
                % where,
            },
        },
        {
            "alert": "K3TimeToFirstTokenHigh",
            "expr": "%s > %s" % (_quantile("vllm:time_to_first_token_seconds_bucket", w), t["ttft_p99_seconds"]),
            "for": w,
            "labels": {"severity": "warning"},
            "annotations": {"summary": "p99 time to first token of %s is {{ $value }} s" % where},
        },
        {
            "alert": "K3InterTokenLatencyHigh",
            "expr": "%s > %s" % (_quantile("vllm:inter_token_latency_seconds_bucket", w), t["itl_p99_seconds"]),
            "for": w,
            "labels": {"severity": "warning"},
            "annotations": {"summary": "p99 inter-token latency of %s is {{ $value }} s" % where},
        },
        {
            "alert": "K3KVCacheFull",
            "expr": "max by (k3_host, k3_service) (vllm:kv_cache_usage_perc) > %s" % t["kv_cache_usage"],
            "for": w,
            "labels": {"severity": "warning"},
            "annotations": {"summary": "KV cache of %s is {{ $value | humanizePercentage }} full" % where},
        },
        {
            "alert": "K3RequestsWaiting",
            "expr": "sum by (k3_host, k3_service) (vllm:num_requests_waiting) > %s" % t["waiting_requests"],
            "for": t["waiting_for"],
            "labels": {"severity": "warning"},
            "annotations": {"summary": "{{ $value }} requests wait on %s" % where},
        },
        {
            "alert": "K3Preemptions",
            "expr": "sum by (k3_host, k3_service) (rate(vllm:num_preemptions_total[%s])) > %s"
            % (w, t["preemptions_per_second"]),
            "for": w,
            "labels": {"severity": "warning"},
            "annotations": {"summary": "%s preempts requests ({{ $value }}/s): the KV cache is too small" % where},
        },
        {
            "alert": "K3RouterFailedRequests",
            "expr": "sum by (k3_host, k3_service) (rate(%s[%s])) > %s"
            % (ROUTER_ERRORS, w, t["router_errors_per_second"]),
            "for": w,
            "labels": {"severity": "critical"},
            "annotations": {"summary": "the router on {{ $labels.k3_host }} fails {{ $value }} requests/s"},
        },
    ]
    return {
        "groups": [
            {"name": "kimi-k3-serving", "rules": rules},
            hardware.hardware_rules(w, t["disk_free_ratio"]),
        ]
    }


def _panel(index, title, exprs, unit=None):
    panel = {
        "id": index + 1,
        "type": "timeseries",
        "title": title,
        "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "targets": [
            {"refId": chr(ord("A") + n), "expr": expr, "legendFormat": legend} for n, (expr, legend) in enumerate(exprs)
        ],
    }
    if unit:
        panel["fieldConfig"] = {"defaults": {"unit": unit}, "overrides": []}
    return panel


def _dashboard(uid, title, panels):
    return {
        "uid": uid,
        "title": title,
        "tags": ["kimi-k3"],
        "schemaVersion": 39,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"}]
        },
        "panels": [_panel(i, *spec) for i, spec in enumerate(panels)],
    }


def dashboards(window="5m"):
    """{file name: Grafana dashboard}: the engines', the router's and the hardware's."""
    who = "{{k3_service}} {{k3_host}}"
    by = "k3_host, k3_service"
    engines = _dashboard(
        "kimi-k3-engines",
        "Kimi-K3 vLLM engines",
        [
            ("Requests running", [("sum by (%s) (vllm:num_requests_running)" % by, who)]),
            ("Requests waiting", [("sum by (%s) (vllm:num_requests_waiting)" % by, who)]),
            ("KV cache usage", [("max by (%s) (vllm:kv_cache_usage_perc)" % by, who)], "percentunit"),
            (
                "Time to first token (p50, p99)",
                [
                    (
                        _quantile("vllm:time_to_first_token_seconds_bucket", window).replace("0.99", "0.5", 1),
                        "p50 " + who,
                    ),
                    (_quantile("vllm:time_to_first_token_seconds_bucket", window), "p99 " + who),
                ],
                "s",
            ),
            ("Inter-token latency (p99)", [(_quantile("vllm:inter_token_latency_seconds_bucket", window), who)], "s"),
            ("End-to-end latency (p99)", [(_quantile("vllm:e2e_request_latency_seconds_bucket", window), who)], "s"),
            ("Queue time (p99)", [(_quantile("vllm:request_queue_time_seconds_bucket", window), who)], "s"),
            (
                "Tokens per second",
                [
                    ("sum by (%s) (rate(vllm:prompt_tokens_total[%s]))" % (by, window), "prompt " + who),
                    ("sum by (%s) (rate(vllm:generation_tokens_total[%s]))" % (by, window), "generated " + who),
                ],
            ),
            (
                "Requests finished per second",
                [("sum by (%s) (rate(vllm:request_success_total[%s]))" % (by, window), who)],
            ),
            (
                "Prefix cache hit rate",
                [
                    (
                        "sum by (%s) (rate(vllm:prefix_cache_hits_total[%s])) / clamp_min(sum by (%s) "
                        "(rate(vllm:prefix_cache_queries_total[%s])), 1)" % (by, window, by, window),
                        who,
                    )
                ],
                "percentunit",
            ),
            ("Preemptions per second", [("sum by (%s) (rate(vllm:num_preemptions_total[%s]))" % (by, window), who)]),
            ("Up", [('up{job="k3-vllm"}', who)]),
        ],
    )
    router = _dashboard(
        "kimi-k3-router",
        "Kimi-K3 router",
        [
            ("Workers", [("count by (k3_host) (vllm_router_worker_health)", "registered {{k3_host}}")]),
            ("Worker health", [("vllm_router_worker_health", "{{worker}}")]),
            (
                "Requests per second",
                [
                    ("sum by (k3_host) (rate(vllm_router_processed_requests_total[%s]))" % window, "processed"),
                    ("sum by (k3_host) (rate(vllm_router_pd_requests_total[%s]))" % window, "P/D"),
                ],
            ),
            (
                "P/D request duration (p99)",
                [
                    (
                        _quantile("vllm_router_pd_request_duration_seconds_bucket", window, by="k3_host"),
                        "{{k3_host}}",
                    )
                ],
                "s",
            ),
            (
                "Failed requests per second",
                [
                    ("sum by (k3_host) (rate(%s[%s]))" % (ROUTER_ERRORS, window), "failed {{k3_host}}"),
                ],
            ),
            ("Up", [('up{job=~"k3-router|k3-metaservice"}', "{{k3_service}} {{k3_host}}")]),
        ],
    )
    hardware_dashboard = _dashboard("kimi-k3-hardware", "Kimi-K3 accelerators and hosts", hardware_board.panels(window))
    return {"kimi-k3-engines.json": engines, "kimi-k3-router.json": router, "kimi-k3-hardware.json": hardware_dashboard}


def expressions(rules, boards):
    """[(where, expr)] of every alert rule and dashboard panel target."""
    out = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            out.append(("rule %s" % rule["alert"], rule["expr"]))
    for name, board in sorted(boards.items()):
        for panel in board["panels"]:
            for query in panel["targets"]:
                out.append(("%s panel %r %s" % (name, panel["title"], query["refId"]), query["expr"]))
    return out


def used_metrics(exprs):
    """The metric names the expressions read (to check against what the services expose)."""
    names = set()
    for _where, expr in exprs:
        for name in _METRIC.findall(expr):
            names.add(name)
    return names
