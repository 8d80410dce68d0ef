# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Readable artefacts beside plan.json: launch scripts and the summary table."""

from __future__ import annotations

import json
import os
import shlex
import tempfile

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._units import shell_lines


def launch_script(plan, host, service):
    """A readable shell script: environment, then exec of the exact argv."""
    lines = [
        "#!/usr/bin/env bash",
        "# kimi_k3.serving plan: profile %s%s, host %s, service %s (%s)"
        % (plan["profile"], _variant(plan), host, service["name"], service["kind"]),
    ]
    if service.get("image"):
        lines.append("# image: %s" % service["image"])
    if service.get("after"):
        lines.append("# start once healthy: %s" % ", ".join(service["after"]))
    if service.get("after_started"):
        lines.append("# start once started: %s" % ", ".join(service["after_started"]))
    lines.append("set -euo pipefail")
    lines.extend(
        shell_lines((service.get("shell") or {}) and {k: v for k, v in service["shell"].items() if k != "prepend"})
    )
    for key, value in service["env"].items():
        lines.append("export %s=%s" % (key, shlex.quote(value)))
    for key, which in (service.get("secret_env") or {}).items():
        # The keys are not in the plan: the script takes them from the caller's environment.
        what = (
            "every key of k3_api_key and k3_admin_api_key, comma-separated"
            if which == "all"
            else "the admin key (k3_admin_api_key, else the first of k3_api_key)"
        )
        lines.append('export %s="${%s:?set %s to %s}"' % (key, key, key, what))
    for spec in service.get("secret_files") or []:
        lines.append("# %s: a 0600 file of the keys (%s), the role writes it" % (spec["path"], spec["format"]))
    lines.extend(shell_lines({"prepend": (service.get("shell") or {}).get("prepend") or {}}))
    lines.append("exec " + " \\\n    ".join(_argv_lines(service["argv"])))
    return "\n".join(lines) + "\n"


def _variant(plan):
    """``, variant NAME`` after the profile's name when k3_variant selected one, else nothing."""
    return ", variant %s" % plan["variant"] if plan.get("variant") else ""


def _argv_lines(argv):
    """One line per flag with its value(s); the program and its positionals on the first."""
    out = []
    for token in argv:
        quoted = shlex.quote(token)
        if out and not token.startswith("-"):
            out[-1] += " " + quoted
        else:
            out.append(quoted)
    return out


def summary_table(plan):
    """A fixed-width table: host, service, role, ranks, ports."""
    rows = [("HOST", "SERVICE", "KIND", "ROLE", "RANKS", "PORTS", "AFTER")]
    for host, data in plan["hosts"].items():
        for svc in data["services"]:
            ranks = svc.get("ranks") or {}
            rank_txt = ",".join(
                "%s=%s" % (k, v) for k, v in ranks.items() if k in ("node_rank", "dp_rank", "dp_start_rank", "dp_size")
            )
            ports = ",".join(
                "%s:%d" % (p["name"], p["port"])
                if p["count"] == 1
                else "%s:%d-%d" % (p["name"], p["port"], p["port"] + p["count"] - 1)
                for p in svc["ports"]
            )
            rows.append(
                (
                    host,
                    svc["name"],
                    svc["kind"],
                    svc["role"],
                    rank_txt or "-",
                    ports or "-",
                    ",".join(svc["after"] + ["%s(started)" % a for a in svc.get("after_started", [])]) or "-",
                )
            )
    auth = plan.get("auth") or {}
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    text = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    head = [
        "profile: %s%s (%s)" % (plan["profile"], _variant(plan), plan.get("title", "")),
        "endpoint: %s" % ((plan.get("endpoint") or {}).get("url", "-")),
        "API keys: %s" % keys_line(auth),
        "Front door: %s" % front_door_line(plan.get("endpoint") or {}),
        "TLS: %s"
        % (
            "https on %s" % ", ".join((plan.get("tls") or {}).get("services") or [])
            if (plan.get("tls") or {}).get("enabled")
            else "none (set k3_tls_cert and k3_tls_key: keys cross the network in clear text)"
        ),
        "",
    ]
    return "\n".join(head + text) + "\n"


def plan_files(plan):
    """Every file the plan playbook writes, relative to the plan directory."""
    files = {"plan.json": json.dumps(plan, indent=2, sort_keys=False) + "\n", "summary.txt": summary_table(plan)}
    for host, data in plan["hosts"].items():
        for svc in data["services"]:
            files["scripts/%s/%s.sh" % (host, svc["name"])] = launch_script(plan, host, svc)
    return files


def write_files(dest, files, check_mode=False):
    """Write the plan files under ``dest`` (only what differs); remove stale launch scripts.

    In check mode nothing is written; returns ``(changed, diffs)`` either way. Raises OSError.
    """
    changed = False
    diffs = []
    wanted = set()
    for rel, content in sorted(files.items()):
        path = os.path.join(dest, rel)
        wanted.add(path)
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                old = handle.read()
        if old == content:
            continue
        changed = True
        diffs.append({"before_header": path, "after_header": path, "before": old or "", "after": content})
        if check_mode:
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".k3plan.")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.chmod(tmp, 0o755 if rel.endswith(".sh") else 0o644)
        os.replace(tmp, path)
    # Launch scripts of services no longer in the plan are stale: remove them.
    scripts = os.path.join(dest, "scripts")
    if os.path.isdir(scripts):
        for root, _dirs, names in os.walk(scripts):
            for name in names:
                path = os.path.join(root, name)
                if path not in wanted:
                    changed = True
                    diffs.append({"before_header": path, "after_header": "(removed)", "before": "", "after": ""})
                    if not check_mode:
                        os.unlink(path)
    return changed, diffs


def keys_line(auth):
    if not auth.get("api_key"):
        return "none (anyone who reaches the endpoint can use it: set k3_api_key and k3_admin_api_key)"
    admin = "the admin key from %s" % auth.get("admin_variable") if auth.get("admin_key") else "no admin key"
    count = "%d client key%s" % (auth["keys"], "" if auth["keys"] == 1 else "s")
    return "required (%s from %s; %s)" % (count, auth["variable"], admin)


def front_door_line(endpoint):
    backend = endpoint.get("backend")
    if not backend:
        return "none (k3_front_door: false): clients reach %s directly" % (endpoint.get("service") or "nothing")
    return "nginx on %s, port %d, in front of %s (%s)" % (
        endpoint["host"],
        endpoint["port"],
        backend["service"],
        backend["url"],
    )
