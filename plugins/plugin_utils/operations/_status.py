# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The status report of a deployment: one row per planned service, and what is wrong, by name.

Input, per inventory host, what status.yml gathered there:

- ``services``: the service_status module's reports (unit state, restarts, health, argv, version, the
  release its files are and whether it still runs an earlier one);
- ``drift``: the services whose unit, environment or configuration files on the host differ from
  what the plan renders (the install step of service_unit in check mode: edited by hand, or the
  inventory changed and was not applied);
- ``unplanned``: the collection's units on the host that the plan no longer has;
- ``accelerators``: the page of each accelerator exporter of the host, by service name (its
  devices' health now: ``observability/_accelerator_health.py``).

A host of the plan with no entry was not reached. Problems: a service not running, a health URL
that does not answer 200, a running argv that is not the planned one, a unit reload pending, files
that differ, an unplanned unit, an unreachable host, an accelerator that is not healthy (the
accelerator exporter's row says how many devices it reports and which are not).
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability._accelerator_health import device_health

COLUMNS = ("HOST", "SERVICE", "UNIT", "STATE", "HEALTH", "RESTARTS", "ARGV", "FILES", "RELEASE", "VERSION", "DEVICES")
# A row with nothing known past its state.
UNKNOWN = ["-"] * (len(COLUMNS) - 4)


def _row(host, planned, report, drifted):
    if report is None:
        return [host, planned["name"], planned["unit"], "unreachable", *UNKNOWN], [
            "%s: host not reached (service %s unknown)" % (host, planned["name"])
        ]
    problems = []
    name = "%s/%s" % (host, planned["name"])
    if report["active"] != "active/running":
        problems.append("%s: unit %s is %s" % (name, planned["unit"], report["active"]))
    if report["has_health"]:
        health = str(report["health"]) if report["health"] is not None else "none"
        if report["health"] != 200:
            problems.append("%s: health URL answers %s" % (name, health))
    else:
        health = "n/a"
    if report["argv_matches"] is None:
        argv = "-"
    elif report["argv_matches"]:
        argv = "plan"
    else:
        argv = "DIFFERS"
        problems.append("%s: the running argv is not the plan's (restart it: playbooks/restart.yml)" % name)
    if report.get("reload_pending"):
        problems.append("%s: unit %s changed on disk and was not reloaded" % (name, planned["unit"]))
    files = "DRIFT" if drifted else "plan"
    if drifted:
        problems.append(
            "%s: its unit, environment or configuration files differ from the plan (edited by hand, or an "
            "inventory change not applied): site.yml --check --diff --limit %s shows them, site.yml restores them"
            % (name, host)
        )
    release = report.get("release") or "-"
    if report.get("release_pending"):
        release += "(restart-owed)"
        problems.append(
            "%s: it still runs an earlier release (its files changed after it started): upgrade.yml rolls it" % name
        )
    row = [
        host,
        planned["name"],
        planned["unit"],
        report["active"],
        health,
        str(report["restarts"]),
        argv,
        files,
        release,
        report.get("version") or "-",
        "-",
    ]
    return row, problems


def _devices(host, planned, pages):
    """The DEVICES cell of an accelerator exporter's row, and a problem per device not healthy."""
    if (planned.get("exporter") or {}).get("job") != "accelerator":
        return "-", []
    page = (pages or {}).get(planned["name"])
    if not page:
        return "no page", ["%s/%s: its metrics page could not be read" % (host, planned["name"])]
    health = device_health(page)
    problems = [
        "%s: %s is %s (%s): drain its engine group before it fails requests"
        % (host, u["device"], u["reason"], planned["name"])
        for u in health["unhealthy"]
    ]
    return health["summary"], problems


def report(plan, gathered, hosts=None):
    """``{"rows": [[...]], "problems": [...], "table": text}`` for ``plan`` from ``gathered`` by host.

    ``hosts`` (e.g. the hosts of a run under --limit) restricts the report to those of the plan.
    """
    rows, problems = [], []
    for host, data in sorted((plan.get("hosts") or {}).items()):
        if hosts is not None and host not in hosts:
            continue
        got = gathered.get(host)
        by_name = {r["name"]: r for r in (got or {}).get("services") or []}
        drift = set((got or {}).get("drift") or [])
        for planned in data.get("services") or []:
            report_ = None if got is None else by_name.get(planned["name"])
            if got is not None and report_ is None:
                row = [host, planned["name"], planned["unit"], "not reported", *UNKNOWN]
                found = ["%s/%s: not reported by the host" % (host, planned["name"])]
            else:
                row, found = _row(host, planned, report_, planned["name"] in drift)
                if report_ is not None:
                    row[-1], more = _devices(host, planned, got.get("accelerators"))
                    found += more
            rows.append(row)
            problems += found
        for unit in (got or {}).get("unplanned") or []:
            rows.append([host, "-", unit, "unplanned", *UNKNOWN])
            problems.append(
                "%s: unit %s is the collection's but not in the plan (a service the inventory no longer has): "
                "playbooks/remove_node.yml or teardown.yml removes it" % (host, unit)
            )
    return {"rows": rows, "problems": problems, "table": table(rows)}


def table(rows):
    """Fixed-width text of ``rows`` under COLUMNS."""
    widths = [max(len(str(r[i])) for r in [COLUMNS] + rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [COLUMNS] + rows]
    return "\n".join(lines)
