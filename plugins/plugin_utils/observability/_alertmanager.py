# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Alertmanager's configuration: where the alerts go (``monitoring_receivers``).

Pure functions; no Ansible imports. Each receiver is one mapping of the role variable
``monitoring_receivers``::

    - {name: ops-webhook, type: webhook, url: "{{ vault_ops_webhook_url }}"}
    - {name: chat, type: slack, api_url: "{{ vault_slack_url }}", channel: "#kimi-k3"}
    - {name: pager, type: pagerduty, routing_key: "{{ vault_pd_key }}", severities: [critical]}
    - {name: mail, type: email, to: ops@example.com, from: k3@example.com,
       smarthost: "smtp.example.com:587", auth_username: k3, auth_password: "{{ vault_smtp }}"}

``type`` is webhook, email, slack (Slack or a Slack-compatible endpoint such as Mattermost's) or
pagerduty (Events API v2 or a compatible one, ``url`` to override its address); ``severities``
keeps a receiver to those alert severities (every alert otherwise); ``send_resolved`` (default
true) sends the resolution too. Every receiver gets every alert it matches (routes with
``continue``), grouped by alert and host. The fields that carry a credential (a webhook's or
Slack's URL, a routing key, a password) are returned as secrets: the file is written 0640 for the
``prometheus`` group, never shown in a diff, and the values are kept out of the output.
"""

from __future__ import annotations

import re

# type: (Alertmanager's list, required fields, optional fields, secret fields)
TYPES = {
    "webhook": ("webhook_configs", ("url",), ("max_alerts",), ("url",)),
    "email": (
        "email_configs",
        ("to", "from", "smarthost"),
        ("auth_username", "auth_password", "require_tls", "hello"),
        ("auth_password",),
    ),
    "slack": ("slack_configs", ("api_url", "channel"), ("username", "title", "text"), ("api_url",)),
    "pagerduty": ("pagerduty_configs", ("routing_key",), ("url", "severity"), ("routing_key",)),
}
COMMON = ("name", "type", "severities", "send_resolved")
SEVERITIES = ("critical", "warning")
NONE = "kimi-k3-none"
DEFAULT_ROUTE = {"group_wait": "10s", "group_interval": "1m", "repeat_interval": "4h"}


class ReceiverError(ValueError):
    """A receiver Alertmanager could not use."""


def _receiver(item, index):
    """One receiver: (its Alertmanager receiver, its route, its secrets)."""
    where = "monitoring_receivers[%d]" % index
    if not isinstance(item, dict):
        raise ReceiverError("%s must be a mapping with name and type, got %r" % (where, type(item).__name__))
    name = item.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name) or name == NONE:
        raise ReceiverError("%s: name must be a word (letters, digits, . _ -), got %r" % (where, name))
    kind = item.get("type")
    if kind not in TYPES:
        raise ReceiverError("%s (%s): type must be one of %s, got %r" % (where, name, ", ".join(TYPES), kind))
    key, required, optional, secret = TYPES[kind]
    missing = [f for f in required if item.get(f) in (None, "")]
    if missing:
        raise ReceiverError("%s (%s): a %s receiver needs %s" % (where, name, kind, ", ".join(missing)))
    unknown = sorted(set(item) - set(required) - set(optional) - set(COMMON))
    if unknown:
        raise ReceiverError(
            "%s (%s): unknown field(s) %s; a %s receiver takes %s"
            % (where, name, ", ".join(unknown), kind, ", ".join(required + optional + COMMON[2:]))
        )
    severities = item.get("severities") or []
    if not isinstance(severities, list) or not set(severities) <= set(SEVERITIES):
        raise ReceiverError("%s (%s): severities must be a list of %s" % (where, name, ", ".join(SEVERITIES)))
    config = {f: item[f] for f in required + optional if item.get(f) not in (None, "")}
    config["send_resolved"] = bool(item.get("send_resolved", True))
    route = {"receiver": name, "continue": True}
    if severities:
        route["matchers"] = ['severity=~"%s"' % "|".join(severities)]
    secrets = [str(item[f]) for f in secret if item.get(f)]
    return {"name": name, key: [config]}, route, secrets


def alertmanager_config(receivers=None, route=None):
    """``(config, secrets)``: alertmanager.yml's document and the credentials it holds.

    Without receivers every alert goes to a receiver that sends nothing (Alertmanager still holds
    and shows them, and silences work), as a site that reads them in its own tools wants.
    """
    if receivers in (None, ""):
        receivers = []
    if not isinstance(receivers, list):
        raise ReceiverError("monitoring_receivers must be a list of receivers, got %r" % type(receivers).__name__)
    timing = dict(DEFAULT_ROUTE)
    for name, value in (route or {}).items():
        if name not in DEFAULT_ROUTE:
            raise ReceiverError("monitoring_route: unknown setting %r (it takes %s)" % (name, ", ".join(DEFAULT_ROUTE)))
        if not isinstance(value, str) or not re.fullmatch(r"\d+[smh]", value):
            raise ReceiverError("monitoring_route: %s must be a duration such as 30s, got %r" % (name, value))
        timing[name] = value
    entries, routes, secrets, seen = [{"name": NONE}], [], [], set()
    for index, item in enumerate(receivers):
        receiver, sub, found = _receiver(item, index)
        if receiver["name"] in seen:
            raise ReceiverError("monitoring_receivers: the name %r is given twice" % receiver["name"])
        seen.add(receiver["name"])
        entries.append(receiver)
        routes.append(sub)
        secrets += found
    config = {
        "route": dict({"receiver": NONE, "group_by": ["alertname", "k3_host"]}, **timing),
        "receivers": entries,
    }
    if routes:
        config["route"]["routes"] = routes
    return config, secrets
