"""Compare checkpoint manifests across nodes (plain Python, no Ansible imports)."""

from __future__ import annotations

# Up to this size a manifest's checksum is the file's whole SHA-256 in either mode (module_utils
# checkpoint_manifest's small_file_bytes default); above it only in mode full.
WHOLE_FILE_BYTES = 16 * 1024 * 1024


def _shown(names):
    return ", ".join(names[:5]) + (" and %d more" % (len(names) - 5) if len(names) > 5 else "")


def _whole(entry, mode):
    """Whether a manifest entry's checksum is its file's whole SHA-256."""
    return mode == "full" or entry["size"] <= WHOLE_FILE_BYTES


def _against_publisher(host, manifest, files, mode):
    """What in one node's ``manifest`` is not as the publisher's ``files`` list (hidden files aside)."""
    listed = {f["path"]: f for f in files if not any(part.startswith(".") for part in f["path"].split("/"))}
    entries = manifest["entries"]
    found = ["%s: missing" % name for name in sorted(set(listed) - set(entries))]
    found += ["%s: not in the publisher's revision" % name for name in sorted(set(entries) - set(listed))]
    for name in sorted(set(listed) & set(entries)):
        want, got = listed[name], entries[name]
        if got["size"] != want["size"]:
            found.append("%s: %d bytes, the publisher's has %d" % (name, got["size"], want["size"]))
        elif (
            want.get("sha256")
            and (mode == "full" or got["size"] <= WHOLE_FILE_BYTES)
            and got["sha256"] != want["sha256"]
        ):
            found.append("%s: SHA-256 %s, the publisher's is %s" % (name, got["sha256"], want["sha256"]))
    if not found:
        return None
    return (
        "host %s: %s is not the publisher's revision: %s. Fix: run site.yml again (model_weights brings it back "
        "from a node that holds it), or remove what is not the publisher's" % (host, manifest["path"], _shown(found))
    )


def publisher_differences(per_host, published, mode="quick"):
    """Every node's folder of a fetched checkpoint against its publisher's list.

    ``published``: per fetched checkpoint its ``path`` (the folder) and ``files``, the publisher's
    list (path, size, sha256 or blob_id), as kimi_k3.serving.model_published gives them. The
    names and sizes are compared always; the SHA-256 of a file wherever the manifest has its whole
    hash (small files, or every file in ``mode`` full). A Git blob id is checked when the file is
    fetched or copied, not here."""
    lists = {checkpoint["path"]: checkpoint["files"] for checkpoint in published or []}
    problems = []
    for host in sorted(per_host):
        for m in per_host[host] or []:
            if m.get("exists") and m["path"] in lists:
                problem = _against_publisher(host, m, lists[m["path"]], mode)
                if problem:
                    problems.append(problem)
    return problems


def manifest_differences(per_host, described=None, published=None, mode="quick"):
    """``per_host``: {host: [manifest, ...]} as kimi_k3.serving.model_manifest returns them.

    ``described``: the same, from an earlier step of the run (preflight_host's ``manifests``), taken
    for a host whose ``per_host`` entry is empty (it did not describe its folders again).
    ``published``: the checkpoints fetched from a hub with the publisher's files (model_published),
    each node's folder compared with them too (publisher_differences; ``mode`` the manifests' mode).

    Returns one problem string per missing folder and per folder whose revision differs between
    hosts, naming the hosts on each side and a few of the files that differ, then one per node whose
    folder is not the publisher's.
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
            problems.append(
                "%s differs between %s and %s: %s. Fix: use identical checkpoint revisions on every node"
                % (path, ", ".join(base["hosts"]), ", ".join(other["hosts"]), _shown(differ))
            )
    return problems + publisher_differences(per_host, published, mode)
