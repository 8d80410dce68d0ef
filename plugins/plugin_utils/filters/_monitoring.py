# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters over plugin_utils/observability/_monitoring.py: Prometheus' files and the dashboards, from the plan."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _hardware_findings as hardware
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring as monitoring
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring_files as files
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring_web as web


def prometheus_file_sd(plan):
    """{job: [file_sd group]} of the plan's monitoring targets."""
    return monitoring.file_sd((plan.get("monitoring") or {}).get("targets") or [], profile=plan.get("profile"))


@filter_errors(label="monitoring_thresholds")
def prometheus_rules(thresholds=None):
    """The alert rule groups, with the given thresholds in place of the defaults."""
    return monitoring.alert_rules(thresholds)


def prometheus_config(
    targets_dir, rules_files, alertmanagers=(), scrape_interval="15s", ca_file=None, alertmanager_client=None
):
    """prometheus.yml reading one file_sd file per job from targets_dir, and the rule files."""
    return monitoring.prometheus_config(
        targets_dir, rules_files, alertmanagers, scrape_interval, ca_file, alertmanager_client
    )


@filter_errors
def prometheus_web_config(password, user, cert=None, key=None, password_file=None, ca_file=None):
    """``{"web": the --web.config.file document, "alertmanager_client": how Prometheus reaches the
    Alertmanager with the same credentials}``."""
    return {
        "web": web.web_config(user, password, cert, key),
        "alertmanager_client": web.alertmanager_client(user, password_file, ca_file, tls=bool(cert)),
    }


def prometheus_down_targets(plan, active):
    """The plan's targets Prometheus does not scrape successfully, each named with its error."""
    return monitoring.down_targets((plan.get("monitoring") or {}).get("targets") or [], active)


@filter_errors
def bundle_hardware(plan, host):
    """The vendor tools a support bundle runs on ``host`` and the kernel lines it keeps."""
    return hardware.bundle_hardware(plan, host)


@filter_errors
def monitoring_files(plan, settings):
    """Every folder, file and unit of the monitoring stage, for one service_units call."""
    return files.monitoring_files(plan, settings)


def grafana_dashboards(window="5m"):
    """{file name: dashboard} for the engines and the router."""
    return monitoring.dashboards(window)


class Filters:
    """kimi_k3.serving monitoring filters."""

    def filters(self):
        return {
            "prometheus_file_sd": prometheus_file_sd,
            "prometheus_rules": prometheus_rules,
            "prometheus_config": prometheus_config,
            "prometheus_web_config": prometheus_web_config,
            "grafana_dashboards": grafana_dashboards,
            "prometheus_down_targets": prometheus_down_targets,
            "monitoring_files": monitoring_files,
            "bundle_hardware": bundle_hardware,
        }
