# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Waiting, concurrently, until planned services answer their health URL; failing fast on a crashed unit.

Shared by the module that only waits (service_health) and the one that starts services and then waits
for them in the same round trip (service_units). ``run`` is a module's ``run_command``.
"""

from __future__ import annotations

import time

from ansible_collections.kimi_k3.serving.plugins.module_utils.service_probe import (
    http_status,
    journal_tail,
    unit_properties,
)

# The argument spec of one service to wait for (a module's list of them), and of how to wait.
SERVICE_OPTIONS = {
    "name": {"type": "str", "required": True},
    "unit": {"type": "str", "required": True},
    "url": {"type": "str"},
    "health": {"type": "dict"},
}
WAIT_OPTIONS = {
    "api_key": {"type": "str", "default": "", "no_log": True},
    "ca_path": {"type": "str", "default": ""},
    "timeout": {"type": "int", "default": 900},
    "delay": {"type": "float", "default": 2},
    "journal_lines": {"type": "int", "default": 60},
}

WHAT = {"failed": "has failed", "stopped": "is not running", "timeout": "did not become healthy"}
# systemd's exit status 219/CGROUP: it could not put the new process into the unit's control group,
# which happens when the processes of the stop just before are not all gone yet. The program never
# ran; with Restart=on-failure systemd starts it again RestartSec later. A wait lets that happen
# this many times before it calls the service failed.
CGROUP_EXIT = "219"
CGROUP_RETRIES = 2


def with_urls(services):
    """``services`` with each ``url`` taken from its plan ``health`` entry where not given."""
    return [dict(svc, url=svc.get("url") or (svc.get("health") or {}).get("url")) for svc in services]


def service_state(props, restarts_before, require_active, url, api_key, ca_path):
    """failed, stopped or healthy once the unit is one of them; None while it is on its way."""
    active = props.get("ActiveState", "")
    if active == "failed" or int(props.get("NRestarts", "0") or 0) > restarts_before:
        return "failed"
    if active in ("inactive", "deactivating") and require_active:
        return "stopped"
    if active == "active" and (not url or http_status(url, api_key, ca_path) == 200):
        return "healthy"
    return None


def cgroup_retry(props, restarts_before):
    """True when systemd is about to start the unit again after 219/CGROUP (not yet counted)."""
    return (
        props.get("SubState") == "auto-restart"
        and props.get("ExecMainStatus") == CGROUP_EXIT
        and int(props.get("NRestarts", "0") or 0) == restarts_before
    )


class Wait:
    """How to wait: the key and CA for health URLs, the time limits, and whether units are watched."""

    def __init__(self, run, api_key="", ca_path="", timeout=900, delay=2.0, journal_lines=60):
        self.run = run
        self.api_key = api_key
        self.ca_path = ca_path
        self.timeout = timeout
        self.delay = delay
        self.journal_lines = journal_lines

    @classmethod
    def from_params(cls, run, params):
        """The wait a module's parameters (api_key, ca_path, timeout, delay, journal_lines) describe."""
        keys = ("api_key", "ca_path", "timeout", "delay", "journal_lines")
        return cls(run, *(params[k] for k in keys))

    def restarts(self, services, check_units):
        """Each service's unit restart count now (a later increase is a crash)."""
        if not check_units:
            return {s["name"]: 0 for s in services}
        return {s["name"]: int(unit_properties(self.run, s["unit"]).get("NRestarts", "0") or 0) for s in services}

    def poll(self, services, check_units=True, require_active=True, baseline=None):
        """Poll every service until each is healthy, failed or stopped, or the time is up.

        Returns ``(results, elapsed)``: per service (in the given order) its name, state, healthy and
        seconds, with the journal tail of a watched service that did not become healthy.
        """
        start = time.monotonic()
        deadline = start + self.timeout
        baseline = dict(baseline if baseline is not None else self.restarts(services, check_units))
        retries = dict.fromkeys(baseline, 0)
        pending = {s["name"]: s for s in services}
        results = {}
        while pending:
            for name, svc in list(pending.items()):
                props = unit_properties(self.run, svc["unit"]) if check_units else {"ActiveState": "active"}
                if retries[name] < CGROUP_RETRIES and cgroup_retry(props, baseline[name]):
                    baseline[name] += 1  # the restart systemd is about to make is not a crash
                    retries[name] += 1
                state = service_state(props, baseline[name], require_active, svc.get("url"), self.api_key, self.ca_path)
                if state:
                    results[name] = self._result(name, state, start)
                    del pending[name]
            if not pending or time.monotonic() >= deadline:
                break
            time.sleep(self.delay)
        for name in pending:
            results[name] = self._result(name, "timeout", start)
        for svc in services:
            res = results[svc["name"]]
            if not res["healthy"] and check_units:
                res["journal"] = journal_tail(self.run, svc["unit"], self.journal_lines)
        return [results[s["name"]] for s in services], round(time.monotonic() - start, 1)

    def healthy_now(self, services):
        """True when every one of ``services`` is active and answers its health URL, checked once."""
        for svc in with_urls(services):
            props = unit_properties(self.run, svc["unit"])
            restarts = int(props.get("NRestarts", "0") or 0)
            if service_state(props, restarts, True, svc.get("url"), self.api_key, self.ca_path) != "healthy":
                return False
        return True

    @staticmethod
    def _result(name, state, start):
        seconds = round(time.monotonic() - start, 1)
        return {"name": name, "state": state, "healthy": state == "healthy", "seconds": seconds}

    def failures(self, services, results):
        """The failure message for the watched services that did not become healthy ('' when none)."""
        lines = []
        for index, svc in enumerate(services):
            res = results[index]
            if res["healthy"] or "journal" not in res:
                continue
            lines.append(
                "service %s (unit %s) %s after %ss%s\n--- journal (last %d lines) ---\n%s"
                % (
                    res["name"],
                    svc["unit"],
                    WHAT[res["state"]],
                    res["seconds"],
                    " (no answer from %s)" % svc["url"] if svc.get("url") else "",
                    self.journal_lines,
                    res["journal"],
                )
            )
        return "\n".join(lines)
