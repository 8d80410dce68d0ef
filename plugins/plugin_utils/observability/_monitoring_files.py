# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Every file of the monitoring stage, for one call of the service_units module.

The targets (one file-based service discovery file per job: Prometheus reads a changed one by
itself), the alert rules and prometheus.yml (checked by promtool; a change reloads Prometheus),
the Grafana dashboards, in ``install`` mode Alertmanager's configuration (where the alerts go:
``_alertmanager.py``; checked by amtool, 0640 for the ``prometheus`` group, a change reloads it),
and behind credentials (``install`` mode with a password) the web configuration of both daemons,
the password Prometheus reaches Alertmanager with, the TLS certificate, key and CA copied from
where the site put them (readable by the ``prometheus`` group; both daemons read them again by
themselves). The ``ARGS`` line of each daemon's distribution settings file names the collection's
files (a change restarts that daemon). The contents are formatted as the
roles always wrote them (``to_nice_json`` / ``to_nice_yaml``), so a re-run changes nothing.
"""

from __future__ import annotations

import os

from ansible.plugins.filter.core import to_nice_json, to_nice_yaml

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _alertmanager as alertmanager
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _alertmanager_cluster as cluster
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring as monitoring
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring_web as web

# Where the web files go (the prometheus user reads them).
WEB_CERT = "/etc/prometheus/kimi-k3-web.pem"
WEB_KEY = "/etc/prometheus/kimi-k3-web.key"
WEB_CA = "/etc/prometheus/kimi-k3-web-ca.pem"
# Alertmanager's mutual TLS with its peers (two or more monitoring hosts).
CLUSTER_TLS = "/etc/prometheus/kimi-k3-cluster.yml"
GROUP = "prometheus"
PROMETHEUS = "prometheus"

REQUIRED = (
    "mode",
    "targets_dir",
    "dashboards_dir",
    "rules_file",
    "config_file",
    "scrape_interval",
    "thresholds",
    "alertmanagers",
    "services",
    "web_user",
    "web_password",
    "web_config_file",
    "web_password_file",
    "web_defaults_files",
    "web_tls_cert",
    "web_tls_key",
    "web_tls_ca",
    "receivers",
    "route",
    "alertmanager_config_file",
)
ALERTMANAGER = "prometheus-alertmanager"


def _yaml(data):
    return to_nice_yaml(data, indent=2, width=1000)


def _json(data):
    return to_nice_json(data, indent=2) + "\n"


def _file(path, content=None, service=PROMETHEUS, change="none", **extra):
    item = {"path": path, "service": service, "change": change, "mode": "0644"}
    if content is not None:
        item["content"] = content
    item.update(extra)
    return item


def _web_files(conf, tls):
    """The web files: (files, the alertmanager client for prometheus.yml, the secrets they hold: the
    password and its bcrypt hash, both masked wherever the module's arguments are shown or logged)."""
    web_doc = web.web_config(
        conf["web_user"], conf["web_password"], WEB_CERT if tls else None, WEB_KEY if tls else None
    )
    client = web.alertmanager_client(
        conf["web_user"], conf["web_password_file"], WEB_CA if tls and conf["web_tls_ca"] else None, tls=tls
    )
    files = []
    if tls:
        files.append(_file(WEB_CERT, source=conf["web_tls_cert"], group=GROUP))
        files.append(_file(WEB_KEY, source=conf["web_tls_key"], group=GROUP, mode="0640", secret=True))
        if conf["web_tls_ca"]:
            files.append(_file(WEB_CA, source=conf["web_tls_ca"], group=GROUP))
    files.append(_file(conf["web_password_file"], conf["web_password"], group=GROUP, mode="0640", secret=True))
    files.append(
        _file(
            conf["web_config_file"],
            _yaml(web_doc),
            group=GROUP,
            mode="0640",
            secret=True,
            validate="promtool check web-config %s",
        )
    )
    return files, client, [conf["web_password"], *web_doc["basic_auth_users"].values()]


def _args_files(conf, with_web, peer):
    """Each daemon's ARGS line: the web configuration (with a password), Alertmanager's own file
    and its cluster (``_alertmanager_cluster.py``: peers over mutual TLS, or no listener).

    Both read their files again by themselves (or on a reload); a changed flag needs a restart.
    """
    files = []
    for defaults in conf["web_defaults_files"]:
        service = os.path.basename(defaults)
        flags = ["--web.config.file=%s" % conf["web_config_file"]] if with_web else []
        if service == ALERTMANAGER:
            flags.append("--config.file=%s" % conf["alertmanager_config_file"])
            flags += cluster.cluster_flags(peer, CLUSTER_TLS)
        if flags:
            line = 'ARGS="%s"' % " ".join(flags)
            files.append(_file(defaults, service=service, change="restart", line=line, regexp="^ARGS="))
    return files


def _alertmanager_file(conf):
    """Alertmanager's configuration (its receivers hold credentials): (file, secrets)."""
    config, secrets = alertmanager.alertmanager_config(conf["receivers"], conf["route"])
    item = _file(
        conf["alertmanager_config_file"],
        _yaml(config),
        service=ALERTMANAGER,
        change="reload",
        group=GROUP,
        mode="0640",
        validate="amtool check-config %s",
    )
    if secrets:
        item["secret"] = True
    return item, secrets


def monitoring_files(plan, settings):
    """``{"directories", "files", "start", "secrets"}`` of the monitoring stage for the service_units
    module. ``settings``: the role's variables (``REQUIRED``, without their ``monitoring_`` prefix)."""
    missing = [name for name in REQUIRED if name not in settings]
    if missing:
        raise ValueError("monitoring_files needs the settings %s" % ", ".join(missing))
    conf = settings
    install = conf["mode"] == "install"
    with_web = install and bool(conf["web_password"])
    tls = with_web and bool(conf["web_tls_cert"])
    # Peers over mutual TLS where there are two or more monitoring hosts, a certificate and a CA.
    peer = cluster.peering(plan, conf.get("host"), tls and bool(conf["web_tls_ca"])) if install else None
    targets = (plan.get("monitoring") or {}).get("targets") or []
    files = [
        _file("%s/%s.json" % (conf["targets_dir"], job), _json(groups))
        for job, groups in monitoring.file_sd(targets, profile=plan.get("profile")).items()
    ]
    client, secrets = None, []
    if with_web:
        web_files, client, web_secrets = _web_files(conf, tls)
        files += web_files
        secrets += web_secrets
    if install:
        manager, manager_secrets = _alertmanager_file(conf)
        files += [manager] + _args_files(conf, with_web, peer)
        secrets += manager_secrets
    if peer:
        tls_doc = cluster.cluster_tls(WEB_CERT, WEB_KEY, WEB_CA)
        files.append(_file(CLUSTER_TLS, _yaml(tls_doc), service=ALERTMANAGER, change="restart", group=GROUP))
    rules = _file(conf["rules_file"], _yaml(monitoring.alert_rules(conf["thresholds"] or None)), change="reload")
    if install:
        rules["validate"] = "promtool check rules %s"
    files.append(rules)
    if install:
        # Every alert to each Alertmanager of the cluster: it notifies once.
        managers = list(conf["alertmanagers"])
        managers += [m for m in cluster.api_addresses(peer) if m not in managers]
        config = monitoring.prometheus_config(
            conf["targets_dir"], [conf["rules_file"]], managers, conf["scrape_interval"], None, client
        )
        files.append(_file(conf["config_file"], _yaml(config), change="reload", validate="promtool check config %s"))
    files += [
        _file("%s/%s" % (conf["dashboards_dir"], name), _json(board))
        for name, board in monitoring.dashboards("5m").items()
    ]
    return {
        "directories": [
            {"path": conf["targets_dir"], "mode": "0755"},
            {"path": conf["dashboards_dir"], "mode": "0755"},
        ],
        "files": files,
        "start": [{"name": unit, "unit": unit} for unit in conf["services"]] if install else [],
        "secrets": secrets,
    }
