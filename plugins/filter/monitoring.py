# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters over plugin_utils/_monitoring.py: Prometheus' files and the dashboards, from the plan."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.plugin_utils import _monitoring as monitoring


def prometheus_file_sd(plan):
    """{job: [file_sd group]} of the plan's monitoring targets."""
    return monitoring.file_sd((plan.get("monitoring") or {}).get("targets") or [], profile=plan.get("profile"))


def prometheus_rules(thresholds=None):
    """The alert rule groups, with the given thresholds in place of the defaults."""
    try:
        return monitoring.alert_rules(thresholds)
    except monitoring.MonitoringError as exc:
        raise AnsibleFilterError("monitoring_thresholds: %s" % exc) from None


def prometheus_config(targets_dir, rules_files, alertmanagers=(), scrape_interval="15s", ca_file=None):
    """prometheus.yml reading one file_sd file per job from targets_dir, and the rule files."""
    return monitoring.prometheus_config(targets_dir, rules_files, alertmanagers, scrape_interval, ca_file)


def prometheus_down_targets(plan, active):
    """The plan's targets Prometheus does not scrape successfully, each named with its error."""
    return monitoring.down_targets((plan.get("monitoring") or {}).get("targets") or [], active)


def grafana_dashboards(window="5m"):
    """{file name: dashboard} for the engines and the router."""
    return monitoring.dashboards(window)


class FilterModule:
    """kimi_k3.serving monitoring filters."""

    def filters(self):
        return {
            "prometheus_file_sd": prometheus_file_sd,
            "prometheus_rules": prometheus_rules,
            "prometheus_config": prometheus_config,
            "grafana_dashboards": grafana_dashboards,
            "prometheus_down_targets": prometheus_down_targets,
        }
