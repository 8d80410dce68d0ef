"""Prometheus' and Alertmanager's web configuration: a bcrypt hash that checks the password and is
the same on every run (a re-run changes nothing), TLS with both halves, and Prometheus reaching
Alertmanager behind the same credentials."""

from __future__ import annotations

import bcrypt
import pytest

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring as monitoring
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring_web as web

PASSWORD = "k3-monitoring-Unit-0a1b2c"


def test_the_hash_checks_the_password_and_is_the_same_every_time():
    first = web.password_hash(PASSWORD, "kimi-k3")
    assert first.startswith("$2b$10$") and PASSWORD not in first
    assert bcrypt.checkpw(PASSWORD.encode(), first.encode())
    assert not bcrypt.checkpw(b"k3-monitoring-unit-0a1b2c", first.encode())
    assert web.password_hash(PASSWORD, "kimi-k3") == first
    # Another password or user: another salt.
    assert web.password_hash(PASSWORD + "x", "kimi-k3")[:29] != first[:29]
    assert web.password_hash(PASSWORD, "other")[:29] != first[:29]


def test_the_web_configuration_with_and_without_tls():
    plain = web.web_config("kimi-k3", PASSWORD)
    assert list(plain) == ["basic_auth_users"] and list(plain["basic_auth_users"]) == ["kimi-k3"]
    tls = web.web_config("kimi-k3", PASSWORD, "/etc/prometheus/w.pem", "/etc/prometheus/w.key")
    server = tls["tls_server_config"]
    assert (server["cert_file"], server["key_file"]) == ("/etc/prometheus/w.pem", "/etc/prometheus/w.key")
    # TLS 1.2 and newer, and of 1.2's suites only those with forward secrecy and AEAD: the front door's.
    assert server["min_version"] == "TLS12"
    assert len(server["cipher_suites"]) == 6
    assert all(
        s.startswith("TLS_ECDHE_") and ("_GCM_" in s or "_CHACHA20_POLY1305_" in s) for s in server["cipher_suites"]
    )
    with pytest.raises(web.WebConfigError, match="certificate and its key"):
        web.web_config("kimi-k3", PASSWORD, "/etc/prometheus/w.pem", None)


@pytest.mark.parametrize("bad", ["", None, ["a", "b"], "x" * 73])
def test_a_password_that_cannot_be_hashed_is_refused(bad):
    with pytest.raises(web.WebConfigError, match="k3_monitoring_password"):
        web.password_hash(bad, "kimi-k3")


def test_prometheus_reaches_alertmanager_with_the_password_file_not_the_password():
    client = web.alertmanager_client("kimi-k3", "/etc/prometheus/p", "/etc/ca.pem", tls=True)
    config = monitoring.prometheus_config("/t", ["/r.yml"], ["10.0.0.9:9093"], alertmanager_client=client)
    (manager,) = config["alerting"]["alertmanagers"]
    assert manager == {
        "basic_auth": {"username": "kimi-k3", "password_file": "/etc/prometheus/p"},
        "scheme": "https",
        "tls_config": {"ca_file": "/etc/ca.pem"},
        "static_configs": [{"targets": ["10.0.0.9:9093"]}],
    }
    plain = monitoring.prometheus_config("/t", ["/r.yml"], ["127.0.0.1:9093"])
    assert plain["alerting"]["alertmanagers"] == [{"static_configs": [{"targets": ["127.0.0.1:9093"]}]}]
