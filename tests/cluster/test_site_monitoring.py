"""The monitoring stage on the real sandbox: Debian's Prometheus and Alertmanager on k3-sb-mon.

site.yml's monitoring stage installs them from the hosts' local Debian mirror and writes the
plan's targets, rules and dashboards (roles/monitoring). Here, against the running Prometheus:
every planned target is up with the plan's labels; every expression of every alert rule and
dashboard panel evaluates without error and returns series once requests went through the router
(one of them failed by it, for its error counters); a chip the NPU Exporter's stand-in reports
unhealthy fires K3NpuUnhealthy naming host and chip, and it resolves; stopping an engine fires K3ServiceDown naming
it, in Prometheus and in Alertmanager, which posts it to the sandbox's webhook receiver (a server
of this test on the controller), and a re-run of site.yml resolves it there too; promtool checks the
rules and runs unit tests of them. Needs root; the deployment is tests/helpers/cluster_sandbox.py's.
"""

from __future__ import annotations

import json
import os
import re
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from helpers.sandbox_run import adhoc, on, playbook
from helpers.secured_sandbox import FRONT_DOOR, MONITORING, SANDBOX_CA, monitoring_request, request
from helpers.tls_scan import SSLYZE, scan

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring as monitoring

# Its last change (an engine stopped) ends with the site.yml run that converges it again.
LEAVES_CONVERGED = True
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")

MON = "k3-sb-mon"
# Behind credentials (k3_monitoring_password) and TLS (the sandbox's certificate).
PROMETHEUS = "https://10.77.0.18:9090"
ALERTMANAGER = "https://10.77.0.18:9093"
RULES = "/etc/prometheus/kimi-k3-rules.yml"
# What only root and the prometheus group may read on the monitoring host.
SECRET_FILES = (
    "/etc/prometheus/kimi-k3-web.key",
    "/etc/prometheus/kimi-k3-web.password",
    "/etc/prometheus/kimi-k3-web.yml",
    "/etc/prometheus/kimi-k3-alertmanager.yml",
)
# Where the sandbox's Alertmanager sends its notifications (inventories/sandbox: monitoring_receivers).
WEBHOOK_PORT = 19093


def get(url):
    status, text = monitoring_request(url)
    assert status == 200, (url, status, text[:300])
    return json.loads(text)


def query(expr):
    out = get("%s/api/v1/query?%s" % (PROMETHEUS, urllib.parse.urlencode({"query": expr})))
    assert out["status"] == "success", (expr, out)
    return out["data"]["result"]


def wait(what, probe, timeout=180, delay=2):
    """probe() until it returns something true; its last value, or a failure naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value or time.monotonic() > deadline:
            assert value, "%s: not within %d s" % (what, timeout)
            return value
        time.sleep(delay)


def plan_of(cluster):
    return json.loads((cluster["plan_dir"] / "plan.json").read_text())


def on_mon(command):
    """stdout of a shell command on the monitoring host."""
    return on(MON, command).stdout


def measured(expr):
    """An alert rule's measured quantity: its expression without the final comparison."""
    return re.sub(r"\s*(>|<|==|>=|<=)\s*[0-9.]+\s*$", "", expr)


def test_prometheus_scrapes_every_planned_target_with_the_plan_labels(cluster):
    plan = plan_of(cluster)
    active = get(PROMETHEUS + "/api/v1/targets?state=active")["data"]["activeTargets"]
    assert monitoring.down_targets(plan["monitoring"]["targets"], active) == []
    got = sorted(
        (t["labels"]["job"], t["labels"]["k3_host"], t["labels"]["k3_service"], t["labels"]["k3_profile"])
        for t in active
    )
    engines = ("k3-sb-decode", "k3-sb-dp0", "k3-sb-dp1", "k3-sb-prefill")
    hosts = ("k3-sb-decode", "k3-sb-dp0", "k3-sb-dp1", "k3-sb-front", "k3-sb-prefill")
    assert got == sorted(
        [
            ("k3-metaservice", "k3-sb-front", "metaservice", "sandbox-cpu"),
            ("k3-router", "k3-sb-front", "router", "sandbox-cpu"),
            ("k3-vllm", "k3-sb-decode", "decode", "sandbox-cpu"),
            ("k3-vllm", "k3-sb-dp0", "engine", "sandbox-cpu"),
            ("k3-vllm", "k3-sb-prefill", "prefill", "sandbox-cpu"),
        ]
        # The node exporter on every host, the accelerator exporter (here its stand-in) on every engine
        # host: the headless follower k3-sb-dp1 too, its devices are its own.
        + [("k3-node", h, "node-exporter", "sandbox-cpu") for h in hosts]
        + [("k3-accelerator", h, "accelerator-exporter", "sandbox-cpu") for h in engines]
    )
    # The router's listener is on its host's address (the plan added it), guarded by the firewall.
    assert "http://10.77.0.11:29000/metrics" in {t["scrapeUrl"] for t in active}
    assert request("http://10.77.0.11:29000/metrics")[0] == 200


def test_every_rule_and_panel_expression_evaluates_and_returns_series(cluster):
    key = cluster["keys"][0]
    chat = {"model": "kimi-k3-sandbox", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    for _unused in range(6):
        assert request(FRONT_DOOR + "/v1/chat/completions", key, chat)[0] == 200
    # One request the router fails (more tokens than the model's length: prefill refuses it), for
    # its error counters' first sample (they appear in /metrics only after a first error).
    status, _body = request(FRONT_DOOR + "/v1/chat/completions", key, dict(chat, max_tokens=99999))
    assert status == 400
    rules = yaml.safe_load(on_mon("cat %s" % RULES))
    # The hardware group reads every vendor's exporter; the sandbox runs the node exporter and a
    # stand-in of the NPU Exporter only, without RDMA ports: the NPU status rules must have series
    # here, the others are tested on recorded series (tests/unit/test_hardware_rules.py).
    hardware = next(group for group in rules["groups"] if group["name"] == "kimi-k3-hardware")
    rules["groups"].remove(hardware)
    npu = [
        r["expr"] for r in hardware["rules"] if r["alert"] in ("K3NpuUnhealthy", "K3NpuNetworkDown", "K3NpuLinkDown")
    ]
    assert len(npu) == 3
    # The hardware dashboard's panels that read what the sandbox runs: NPU status and temperature,
    # the disks, the exporters' up.
    board = json.loads(on_mon("cat /var/lib/kimi-k3/dashboards/kimi-k3-hardware.json"))
    npu += [
        t["expr"]
        for panel in board["panels"]
        for t in panel["targets"]
        if re.search(r"npu_chip_info|node_filesystem|k3-node", t["expr"])
    ]
    assert len(npu) >= 8, npu
    for expr in npu:
        assert wait("series of %s" % expr, lambda expr=expr: query(measured(expr)), timeout=60)
    boards = {
        name: json.loads(on_mon("cat /var/lib/kimi-k3/dashboards/%s" % name))
        for name in ("kimi-k3-engines.json", "kimi-k3-router.json")
    }
    exprs = [
        (where, measured(expr) if where.startswith("rule ") else expr)
        for where, expr in monitoring.expressions(rules, boards)
    ]
    assert len(exprs) >= 20

    # Within a few scrapes after the requests, every expression has series (rates over the window too).
    deadline = time.monotonic() + 90
    missing = [(where, expr) for where, expr in exprs if not query(expr)]
    while missing and time.monotonic() < deadline:
        time.sleep(5)
        missing = [(where, expr) for where, expr in missing if not query(expr)]
    assert missing == []


def firing(alertname, host):
    alerts = get(PROMETHEUS + "/api/v1/alerts")["data"]["alerts"]
    return [
        a
        for a in alerts
        if a["labels"].get("alertname") == alertname and a["labels"].get("k3_host") == host and a["state"] == "firing"
    ]


class Webhook:
    """The sandbox's alert receiver (monitoring_receivers: a webhook to the controller, 10.77.0.1):
    records every notification Alertmanager posts while a test runs."""

    def __init__(self, port=WEBHOOK_PORT):
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received.append((self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_args):
                pass

        self.server = ThreadingHTTPServer(("10.77.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def notified(self, alertname, host, status):
        """The notifications of ``status`` (firing, resolved) that carry that alert of that host."""
        return [
            body
            for _path, body in self.received
            if body.get("status") == status
            and any(
                a["labels"].get("alertname") == alertname and a["labels"].get("k3_host") == host
                for a in body.get("alerts", [])
            )
        ]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_stopped_engine_fires_service_down_naming_it_then_a_rerun_resolves_it(cluster):
    webhook = Webhook()
    try:
        stopped_engine_fires_and_resolves(webhook)
    finally:
        webhook.close()


def stopped_engine_fires_and_resolves(webhook):
    on("k3-sb-decode", "systemctl stop k3-decode")
    alerts = wait("K3ServiceDown firing for k3-sb-decode", lambda: firing("K3ServiceDown", "k3-sb-decode"))
    assert alerts[0]["labels"]["k3_service"] == "decode" and alerts[0]["labels"]["severity"] == "critical"
    assert alerts[0]["annotations"]["summary"] == "decode on k3-sb-decode is down"
    # Alertmanager has it too (Prometheus sends its firing alerts there).
    received = wait(
        "Alertmanager holding K3ServiceDown for k3-sb-decode",
        lambda: [
            a
            for a in get(ALERTMANAGER + "/api/v2/alerts")
            if a["labels"].get("alertname") == "K3ServiceDown" and a["labels"].get("k3_host") == "k3-sb-decode"
        ],
        timeout=60,
    )
    assert received[0]["status"]["state"] == "active"
    # No other service is reported down.
    assert {
        a["labels"]["k3_host"]
        for a in get(PROMETHEUS + "/api/v1/alerts")["data"]["alerts"]
        if a["labels"]["alertname"] == "K3ServiceDown"
    } == {"k3-sb-decode"}
    # And its receiver got it: the webhook of monitoring_receivers, from Alertmanager.
    sent = wait(
        "the webhook receiving K3ServiceDown for k3-sb-decode",
        lambda: webhook.notified("K3ServiceDown", "k3-sb-decode", "firing"),
        timeout=60,
    )
    assert sent[0]["receiver"] == "sandbox-webhook" and sent[0]["groupLabels"]["k3_host"] == "k3-sb-decode"
    playbook("site.yml")
    wait("K3ServiceDown resolved for k3-sb-decode", lambda: not firing("K3ServiceDown", "k3-sb-decode"), timeout=120)
    # The resolution reaches the receiver too (send_resolved, within the route's group_interval).
    wait(
        "the webhook receiving the resolution",
        lambda: webhook.notified("K3ServiceDown", "k3-sb-decode", "resolved"),
        timeout=90,
    )


PROMTOOL_TESTS = """
rule_files: [%(rules)s]
evaluation_interval: 5s
tests:
  - interval: 5s
    input_series:
      - series: 'up{job="k3-vllm",instance="10.0.0.5:8200",k3_host="node5",k3_service="decode",k3_unit="k3-decode"}'
        values: '1 1 0x40'
      - series: 'up{job="k3-vllm",instance="10.0.0.6:8100",k3_host="node6",k3_service="prefill",k3_unit="k3-prefill"}'
        values: '1x42'
      - series: 'vllm:kv_cache_usage_perc{job="k3-vllm",k3_host="node6",k3_service="prefill"}'
        values: '0.5 0.99x120'
    alert_rule_test:
      - eval_time: 3m
        alertname: K3ServiceDown
        exp_alerts:
          - exp_labels:
              {severity: critical, job: k3-vllm, instance: "10.0.0.5:8200", k3_host: node5, k3_service: decode,
               k3_unit: k3-decode}
            exp_annotations:
              summary: decode on node5 is down
              description: Prometheus cannot scrape decode on node5 (10.0.0.5:8200, unit k3-decode).
      - eval_time: 9m
        alertname: K3KVCacheFull
        exp_alerts:
          - exp_labels: {severity: warning, k3_host: node6, k3_service: prefill}
            exp_annotations:
              summary: KV cache of prefill on node6 is 99%% full
      - eval_time: 5s
        alertname: K3ServiceDown
        exp_alerts: []
"""


def test_promtool_checks_the_rules_and_their_unit_tests_pass(cluster, tmp_path):
    out = on_mon("promtool check rules %s" % RULES)
    count = sum(len(group["rules"]) for group in monitoring.alert_rules()["groups"])
    assert "SUCCESS: %d rules found" % count in out, out
    tests = tmp_path / "k3-rules-test.yml"
    tests.write_text(PROMTOOL_TESTS % {"rules": RULES})
    adhoc(MON, "ansible.builtin.copy", "src=%s dest=/tmp/k3-rules-test.yml mode=0644" % tests)
    tested = on(MON, "promtool test rules /tmp/k3-rules-test.yml 2>&1", check=False)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout[-3000:]
    # A test that expects what the rules do not do fails: promtool really compares.
    tests.write_text(
        PROMTOOL_TESTS.replace("summary: decode on node5 is down", "summary: something else") % {"rules": RULES}
    )
    adhoc(MON, "ansible.builtin.copy", "src=%s dest=/tmp/k3-rules-test.yml mode=0644" % tests)
    wrong = on(MON, "promtool test rules /tmp/k3-rules-test.yml 2>&1", check=False)
    assert wrong.returncode != 0 and "FAILED" in wrong.stdout, wrong.stdout[-3000:]


def test_prometheus_and_alertmanager_refuse_a_caller_without_the_credentials(cluster):
    """Behind basic auth and TLS: a query, an admin call and a silence refused without the password
    (and with a wrong one); with it the query and the silence list answer, and Prometheus still
    reaches Alertmanager."""
    silence = {
        "matchers": [{"name": "alertname", "value": "K3ServiceDown", "isRegex": False}],
        "startsAt": "2026-01-01T00:00:00Z",
        "endsAt": "2030-01-01T00:00:00Z",
        "createdBy": "outside",
        "comment": "silence every alert",
    }
    refused = [
        (PROMETHEUS + "/api/v1/query?query=up", None, None),
        (PROMETHEUS + "/api/v1/admin/tsdb/snapshot", {}, "POST"),
        (PROMETHEUS + "/-/reload", {}, "POST"),
        (ALERTMANAGER + "/api/v2/silences", silence, "POST"),
        (ALERTMANAGER + "/api/v2/alerts", None, None),
    ]
    for url, body, method in refused:
        assert monitoring_request(url, body, method, auth=False)[0] == 401, url
    saved = dict(MONITORING)
    try:
        MONITORING["password"] = "not-the-password"
        assert monitoring_request(PROMETHEUS + "/api/v1/query?query=up")[0] == 401
    finally:
        MONITORING.update(saved)
    assert get(ALERTMANAGER + "/api/v2/silences") == []
    assert query("up") and get(PROMETHEUS + "/api/v1/alertmanagers")["data"]["activeAlertmanagers"]
    # Plain HTTP is not served.
    assert monitoring_request(PROMETHEUS.replace("https:", "http:") + "/api/v1/query?query=up")[0] == 400
    # Neither the password nor its bcrypt hash in the monitoring host's journal (module arguments
    # are logged there as "Invoked with ...", secrets masked).
    journal = on_mon("journalctl --no-pager -o cat | grep -c -F '$2b$' || true")
    assert journal.strip() == "0", journal
    # No gossip port (9094, TCP and UDP): nothing to join past the password.
    listening = on_mon("ss -Hlntu")
    assert ":9094 " not in listening and ":9090 " in listening, listening
    # The key, the password, the web and Alertmanager configurations by account name inside the host:
    # root's, readable by the group prometheus, which has no other member there.
    held = on_mon("stat -c '%a %U %G %n' " + " ".join(SECRET_FILES)).split("\n")
    assert sorted(line.split()[3] for line in held if line) == sorted(SECRET_FILES), held
    assert all(line.split()[:3] == ["640", "root", "prometheus"] for line in held if line), held
    assert on_mon("getent group prometheus").strip().split(":")[3] == ""


def test_a_failing_npu_fires_its_alert_naming_host_and_chip_then_it_resolves(cluster):
    """The NPU Exporter's stand-in on k3-sb-prefill reports chip 3 unhealthy (the series its recorded
    page has, with the value flipped): K3NpuUnhealthy fires naming the host and the chip, reaches
    Alertmanager, status.yml names the chip, and the alert resolves when the chip is healthy again."""
    overrides = "/run/k3-exporter-double/overrides"
    on(
        "k3-sb-prefill",
        "mkdir -p %s && echo 'npu_chip_info_health_status id=3 0' > %s" % (overrides.rsplit("/", 1)[0], overrides),
    )
    try:
        alerts = wait("K3NpuUnhealthy firing for k3-sb-prefill", lambda: firing("K3NpuUnhealthy", "k3-sb-prefill"))
        assert [(a["labels"]["id"], a["labels"]["severity"]) for a in alerts] == [("3", "critical")]
        assert alerts[0]["annotations"]["summary"] == "NPU 3 on k3-sb-prefill is unhealthy"
        wait(
            "Alertmanager holding K3NpuUnhealthy for k3-sb-prefill",
            lambda: [
                a
                for a in get(ALERTMANAGER + "/api/v2/alerts")
                if a["labels"].get("alertname") == "K3NpuUnhealthy" and a["labels"].get("k3_host") == "k3-sb-prefill"
            ],
            timeout=60,
        )
        # Only that chip of that host.
        others = [
            a["labels"]
            for a in get(PROMETHEUS + "/api/v1/alerts")["data"]["alerts"]
            if a["labels"]["alertname"].startswith("K3Npu")
        ]
        assert others == [alerts[0]["labels"]], others
        # status.yml reads the same page on the host: the chip is a problem naming host and chip.
        out = playbook("playbooks/status.yml", check=False)
        assert out.returncode != 0
        assert "k3-sb-prefill: NPU 3 is unhealthy (accelerator-exporter)" in out.stdout, out.stdout[-3000:]
        assert "1 of 8 unhealthy: NPU 3 unhealthy" in out.stdout
    finally:
        on("k3-sb-prefill", "rm -f %s" % overrides)
    wait("K3NpuUnhealthy resolved", lambda: not firing("K3NpuUnhealthy", "k3-sb-prefill"), timeout=60)


@pytest.mark.skipif(not SSLYZE.exists(), reason="no sslyze: tools/venvs.sh scan")
def test_every_tls_port_offers_aead_suites_only_and_a_chain_valid_under_strict_checks(cluster, tmp_path):
    """sslyze against the front door, Prometheus and Alertmanager, as an outside tester scans them:
    no SSL, no TLS 1.0/1.1, of TLS 1.2 only forward-secret AEAD suites (Go offered CBC-SHA1 suites
    before the web configuration named its own), and a chain that strict X.509 verification accepts."""
    found = {
        address: scan(address, SANDBOX_CA, tmp_path)
        for address in (FRONT_DOOR.split("//")[1], PROMETHEUS.split("//")[1], ALERTMANAGER.split("//")[1])
    }
    assert {a: (f["weak"], f["chain"]) for a, f in found.items()} == {a: ([], []) for a in found}
    assert all(f["accepted"]["tls_1_2"] and f["accepted"]["tls_1_3"] for f in found.values())
    # A key per service: the monitoring host does not present the front door's certificate, and the
    # CA's private key is not in the folder mounted into the hosts.
    served = {address: ssl.get_server_certificate(tuple(address.split(":"))) for address in found}
    assert served[PROMETHEUS.split("//")[1]] != served[FRONT_DOOR.split("//")[1]]
    assert served[PROMETHEUS.split("//")[1]] == served[ALERTMANAGER.split("//")[1]]
    assert on_mon("ls %s" % SANDBOX_CA.parent).split() == [
        "ca.pem",
        "front-door.key",
        "front-door.pem",
        "monitoring.key",
        "monitoring.pem",
    ]
