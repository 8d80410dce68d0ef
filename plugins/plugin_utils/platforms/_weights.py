"""Compare checkpoint manifests across nodes (plain Python, no Ansible imports)."""

from __future__ import annotations


def manifest_differences(per_host, described=None):
    """``per_host``: {host: [manifest, ...]} as kimi_k3.serving.model_manifest returns them.

    ``described``: the same, from an earlier step of the run (preflight_host's ``manifests``), taken
    for a host whose ``per_host`` entry is empty (it did not describe its folders again).

    Returns one problem string per missing folder and per folder whose revision differs between
    hosts, naming the hosts on each side and a few of the files that differ.
    """
    described = described or {}
    per_host = {host: manifests or described.get(host) or [] for host, manifests in per_host.items()}
    problems = []
    paths = []
    for manifests in per_host.values():
        for m in manifests:
            if m["path"] not in paths:
                paths.append(m["path"])
    for path in paths:
        groups = {}
        for host, manifests in per_host.items():
            m = next((x for x in manifests if x["path"] == path), None)
            if m is None or not m["exists"]:
                problems.append(
                    "host %s: model_weights_paths: %s does not exist. Fix: put the same checkpoint there as on the "
                    "other nodes (shared storage, or copy it)" % (host, path)
                )
                continue
            groups.setdefault(m["digest"], {"hosts": [], "entries": m["entries"]})["hosts"].append(host)
        if len(groups) < 2:
            continue
        ordered = sorted(groups.values(), key=lambda g: (-len(g["hosts"]), g["hosts"]))
        base = ordered[0]
        for other in ordered[1:]:
            names = sorted(set(base["entries"]) | set(other["entries"]))
            differ = [n for n in names if base["entries"].get(n) != other["entries"].get(n)]
            shown = ", ".join(differ[:5]) + (" and %d more" % (len(differ) - 5) if len(differ) > 5 else "")
            problems.append(
                "%s differs between %s and %s: %s. Fix: use identical checkpoint revisions on every node"
                % (path, ", ".join(base["hosts"]), ", ".join(other["hosts"]), shown)
            )
    return problems
