"""Alertmanager's configuration from monitoring_receivers, checked by the real amtool.

amtool comes from the Debian prometheus-alertmanager package that the tests already fetch (the
sandbox's monitoring host installs it), unpacked here: the configuration of each receiver type,
and all four together, must pass ``amtool check-config``; a receiver the collection refuses is
named with its field and the fix; the credentials are returned as secrets.
"""

from __future__ import annotations

import subprocess

import pytest
import yaml
from conftest import unpacked_program

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _alertmanager as alertmanager

pytestmark = pytest.mark.slow

WEBHOOK = {"name": "ops", "type": "webhook", "url": "https://hooks.example.com/k3/s3cr3t-token"}
SLACK = {"name": "chat", "type": "slack", "api_url": "https://hooks.slack.com/services/T0/B0/x1y2", "channel": "#k3"}
PAGER = {
    "name": "pager",
    "type": "pagerduty",
    "routing_key": "0123456789abcdef0123456789abcdef",
    "severities": ["critical"],
}
MAIL = {
    "name": "mail",
    "type": "email",
    "to": "ops@example.com",
    "from": "k3@example.com",
    "smarthost": "smtp.example.com:587",
    "auth_username": "k3",
    "auth_password": "smtp-pass-42",
}


@pytest.fixture(scope="module")
def amtool(tmp_path_factory):
    return unpacked_program("prometheus-alertmanager", "usr/bin/amtool", tmp_path_factory.mktemp("alertmanager"))


def check(amtool, tmp_path, config):
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return subprocess.run([str(amtool), "check-config", str(path)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("receivers", [[], [WEBHOOK], [SLACK], [PAGER], [MAIL], [WEBHOOK, SLACK, PAGER, MAIL]])
def test_amtool_accepts_the_configuration_of_every_receiver_type(amtool, tmp_path, receivers):
    config, _secrets = alertmanager.alertmanager_config(receivers, {"group_interval": "10s"})
    out = check(amtool, tmp_path, config)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout
    assert " - %d receivers" % (len(receivers) + 1) in out.stdout


def test_amtool_refuses_what_alertmanager_would_refuse(amtool, tmp_path):
    """The check can fail: a route naming a receiver that is not there."""
    config, _secrets = alertmanager.alertmanager_config([WEBHOOK])
    config["route"]["routes"][0]["receiver"] = "nobody"
    out = check(amtool, tmp_path, config)
    assert out.returncode != 0 and "nobody" in out.stdout + out.stderr


def test_every_receiver_gets_every_alert_it_matches_grouped_by_alert_and_host():
    config, secrets = alertmanager.alertmanager_config([WEBHOOK, SLACK, PAGER, MAIL])
    route = config["route"]
    assert route["receiver"] == "kimi-k3-none" and route["group_by"] == ["alertname", "k3_host"]
    assert [r["receiver"] for r in route["routes"]] == ["ops", "chat", "pager", "mail"]
    assert all(r["continue"] for r in route["routes"])
    assert route["routes"][2]["matchers"] == ['severity=~"critical"']
    assert "matchers" not in route["routes"][0]
    webhook = config["receivers"][1]["webhook_configs"][0]
    assert webhook == {"url": WEBHOOK["url"], "send_resolved": True}
    assert sorted(secrets) == sorted([WEBHOOK["url"], SLACK["api_url"], PAGER["routing_key"], MAIL["auth_password"]])


def test_without_receivers_the_alerts_stay_in_alertmanager():
    config, secrets = alertmanager.alertmanager_config([])
    assert config["receivers"] == [{"name": "kimi-k3-none"}] and "routes" not in config["route"] and secrets == []


@pytest.mark.parametrize(
    ("receivers", "message"),
    [
        ([{"name": "x", "type": "sms"}], r"monitoring_receivers\[0\] \(x\): type must be one of webhook, email"),
        ([{"name": "x", "type": "slack", "api_url": "https://h"}], r"\(x\): a slack receiver needs channel"),
        ([{"name": "x", "type": "webhook", "url": "u", "token": "t"}], r"unknown field\(s\) token"),
        ([{"type": "webhook", "url": "u"}], r"monitoring_receivers\[0\]: name must be a word"),
        ([WEBHOOK, dict(WEBHOOK)], r"the name 'ops' is given twice"),
        ([dict(WEBHOOK, severities=["page"])], r"severities must be a list of critical, warning"),
        ("ops", r"must be a list of receivers"),
    ],
)
def test_a_receiver_alertmanager_could_not_use_is_refused_naming_it(receivers, message):
    with pytest.raises(alertmanager.ReceiverError, match=message):
        alertmanager.alertmanager_config(receivers)


def test_route_timing_is_checked():
    with pytest.raises(alertmanager.ReceiverError, match="group_wait must be a duration"):
        alertmanager.alertmanager_config([], {"group_wait": 10})
    with pytest.raises(alertmanager.ReceiverError, match="unknown setting 'wait'"):
        alertmanager.alertmanager_config([], {"wait": "10s"})
    config, _secrets = alertmanager.alertmanager_config([], {"repeat_interval": "1h"})
    assert config["route"]["repeat_interval"] == "1h" and config["route"]["group_wait"] == "10s"


def test_the_secret_values_are_what_the_file_holds():
    config, secrets = alertmanager.alertmanager_config([WEBHOOK])
    text = yaml.safe_dump(config)
    # Every credential the file holds is one the module is told to mask, and nothing else is.
    assert secrets == [WEBHOOK["url"]] and WEBHOOK["url"] in text
