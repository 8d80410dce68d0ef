"""The monitoring stage's files for one service_units call (plugin_utils/observability/_monitoring_files.py):
the same bytes the role's filters give, in an order promtool can check (the rules and the web files
before prometheus.yml), what each change does to its daemon, and the keys kept out of sight."""

from __future__ import annotations

import json

import pytest
import yaml
from test_plan_monitoring import inventory

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring as monitoring
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring_files as files
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring_web as web
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner

PASSWORD = "k3-monitoring-Unit-0a1b2c"
SETTINGS = {
    "mode": "install",
    "targets_dir": "/etc/prometheus/kimi-k3",
    "dashboards_dir": "/var/lib/kimi-k3/dashboards",
    "rules_file": "/etc/prometheus/kimi-k3-rules.yml",
    "config_file": "/etc/prometheus/prometheus.yml",
    "scrape_interval": "15s",
    "thresholds": {},
    "alertmanagers": ["10.77.0.18:9093"],
    "services": ["prometheus", "prometheus-alertmanager"],
    "web_user": "kimi-k3",
    "web_password": PASSWORD,
    "web_config_file": "/etc/prometheus/kimi-k3-web.yml",
    "web_password_file": "/etc/prometheus/kimi-k3-web.password",
    "web_defaults_files": ["/etc/default/prometheus", "/etc/default/prometheus-alertmanager"],
    "web_tls_cert": "/srv/site/tls/mon.pem",
    "web_tls_key": "/srv/site/tls/mon.key",
    "web_tls_ca": "/srv/site/tls/ca.pem",
    "receivers": [],
    "route": {},
    "alertmanager_config_file": "/etc/prometheus/kimi-k3-alertmanager.yml",
}


@pytest.fixture(scope="module")
def plan():
    return planner.build_plan(inventory({"k3-sb-mon": "10.77.0.18"}))


def by_path(staged):
    return {f["path"]: f for f in staged["files"]}


def test_with_tls_every_file_is_there_in_an_order_promtool_can_check(plan):
    staged = files.monitoring_files(plan, SETTINGS)
    paths = [f["path"] for f in staged["files"]]
    jobs = list(monitoring.file_sd(plan["monitoring"]["targets"], profile=plan["profile"]))
    assert paths[: len(jobs)] == ["/etc/prometheus/kimi-k3/%s.json" % job for job in jobs]
    web_files = [
        files.WEB_CERT,
        files.WEB_KEY,
        files.WEB_CA,
        SETTINGS["web_password_file"],
        SETTINGS["web_config_file"],
        SETTINGS["alertmanager_config_file"],
        *SETTINGS["web_defaults_files"],
    ]
    assert paths[len(jobs) : len(jobs) + len(web_files)] == web_files
    # The rules before prometheus.yml, which names them; the dashboards last.
    assert paths.index(SETTINGS["rules_file"]) + 1 == paths.index(SETTINGS["config_file"])
    assert all(
        p.startswith(SETTINGS["dashboards_dir"] + "/") for p in paths[paths.index(SETTINGS["config_file"]) + 1 :]
    )
    assert staged["start"] == [
        {"name": "prometheus", "unit": "prometheus"},
        {"name": "prometheus-alertmanager", "unit": "prometheus-alertmanager"},
    ]
    # The password and its bcrypt hash (in the web configuration's content): both masked in the
    # module's arguments, which Ansible logs on the host ("Invoked with") and shows with -vvv.
    assert staged["secrets"] == [PASSWORD, web.password_hash(PASSWORD, "kimi-k3")]


def test_each_file_has_the_bytes_mode_group_and_effect_the_role_gave_it(plan):
    staged = by_path(files.monitoring_files(plan, SETTINGS))
    config = staged[SETTINGS["config_file"]]
    assert config["change"] == "reload" and config["validate"] == "promtool check config %s"
    parsed = yaml.safe_load(config["content"])
    assert parsed["alerting"]["alertmanagers"][0]["basic_auth"]["password_file"] == SETTINGS["web_password_file"]
    assert parsed["alerting"]["alertmanagers"][0]["tls_config"] == {"ca_file": files.WEB_CA}
    rules = staged[SETTINGS["rules_file"]]
    assert rules["change"] == "reload" and rules["validate"] == "promtool check rules %s"
    assert yaml.safe_load(rules["content"]) == monitoring.alert_rules(None)
    targets = staged["/etc/prometheus/kimi-k3/vllm.json"]
    assert targets["change"] == "none" and targets["content"].endswith("]\n")
    assert json.loads(targets["content"]) == monitoring.file_sd(plan["monitoring"]["targets"], plan["profile"])["vllm"]
    key = staged[files.WEB_KEY]
    assert key == {
        "path": files.WEB_KEY,
        "service": "prometheus",
        "change": "none",
        "mode": "0640",
        "source": SETTINGS["web_tls_key"],
        "group": "prometheus",
        "secret": True,
    }
    web_config = staged[SETTINGS["web_config_file"]]
    assert web_config["secret"] and web_config["group"] == "prometheus" and web_config["mode"] == "0640"
    assert yaml.safe_load(web_config["content"]) == web.web_config("kimi-k3", PASSWORD, files.WEB_CERT, files.WEB_KEY)
    assert PASSWORD not in web_config["content"]
    args = {
        "prometheus": "--web.config.file=/etc/prometheus/kimi-k3-web.yml",
        "prometheus-alertmanager": "--web.config.file=/etc/prometheus/kimi-k3-web.yml "
        "--config.file=/etc/prometheus/kimi-k3-alertmanager.yml --cluster.listen-address=",
    }
    for defaults, unit in zip(SETTINGS["web_defaults_files"], SETTINGS["services"], strict=True):
        assert staged[defaults] == {
            "path": defaults,
            "service": unit,
            "change": "restart",
            "mode": "0644",
            "line": 'ARGS="%s"' % args[unit],
            "regexp": "^ARGS=",
        }
    # Without receivers the alerts stay in Alertmanager: a file without credentials, shown in a diff.
    manager = staged[SETTINGS["alertmanager_config_file"]]
    assert manager["change"] == "reload" and manager["validate"] == "amtool check-config %s"
    assert manager["group"] == "prometheus" and manager["mode"] == "0640" and "secret" not in manager
    assert yaml.safe_load(manager["content"])["receivers"] == [{"name": "kimi-k3-none"}]


def test_without_a_password_there_are_no_web_files_and_prometheus_reaches_alertmanager_plainly(plan):
    staged = files.monitoring_files(plan, dict(SETTINGS, web_password=""))
    paths = {f["path"] for f in staged["files"]}
    assert not paths & {files.WEB_CERT, files.WEB_KEY, SETTINGS["web_config_file"], "/etc/default/prometheus"}
    # Alertmanager's ARGS still name the collection's configuration (its receivers).
    assert by_path(staged)["/etc/default/prometheus-alertmanager"]["line"] == (
        'ARGS="--config.file=/etc/prometheus/kimi-k3-alertmanager.yml --cluster.listen-address="'
    )
    config = yaml.safe_load(by_path(staged)[SETTINGS["config_file"]]["content"])
    assert "basic_auth" not in config["alerting"]["alertmanagers"][0] and staged["secrets"] == []


def test_in_config_mode_only_the_targets_rules_and_dashboards_and_nothing_runs(plan):
    staged = files.monitoring_files(plan, dict(SETTINGS, mode="config"))
    paths = [f["path"] for f in staged["files"]]
    assert SETTINGS["config_file"] not in paths and files.WEB_KEY not in paths and staged["start"] == []
    assert "validate" not in by_path(staged)[SETTINGS["rules_file"]]


def test_a_missing_setting_is_named(plan):
    settings = {k: v for k, v in SETTINGS.items() if k not in ("rules_file", "web_tls_ca")}
    with pytest.raises(ValueError, match="monitoring_files needs the settings rules_file, web_tls_ca"):
        files.monitoring_files(plan, settings)


def test_two_monitoring_hosts_peer_over_mutual_tls_and_each_prometheus_alerts_both():
    """With a CA, the Alertmanagers of two monitoring hosts are one cluster on their plan addresses
    (tests/integration/test_alertmanager_cluster.py runs the real one with these flags)."""
    two = planner.build_plan(inventory({"k3-sb-mon": "10.77.0.18", "k3-sb-mon2": "10.77.0.19"}))
    own = dict(SETTINGS, host="k3-sb-mon2", alertmanagers=["10.77.0.19:9093"])
    staged = by_path(files.monitoring_files(two, own))
    args = staged["/etc/default/prometheus-alertmanager"]["line"]
    assert args.endswith(
        "--cluster.listen-address=10.77.0.19:9094 --cluster.advertise-address=10.77.0.19:9094 "
        '--cluster.peer=10.77.0.18:9094 --cluster.tls-config=%s"' % files.CLUSTER_TLS
    )
    tls = staged[files.CLUSTER_TLS]
    assert (tls["service"], tls["change"], tls["group"]) == ("prometheus-alertmanager", "restart", "prometheus")
    server = yaml.safe_load(tls["content"])["tls_server_config"]
    assert server["client_auth_type"] == "RequireAndVerifyClientCert" and server["client_ca_file"] == files.WEB_CA
    managers = yaml.safe_load(staged[SETTINGS["config_file"]]["content"])["alerting"]["alertmanagers"][0]
    assert managers["static_configs"][0]["targets"] == ["10.77.0.19:9093", "10.77.0.18:9093"]
    # Without a CA to check a peer's certificate against: no cluster listener, each stands alone.
    alone = by_path(files.monitoring_files(two, dict(own, web_tls_ca="")))
    assert alone["/etc/default/prometheus-alertmanager"]["line"].endswith('--cluster.listen-address="')
    assert files.CLUSTER_TLS not in alone
