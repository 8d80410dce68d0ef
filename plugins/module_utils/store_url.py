# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A checkpoint fetched from a plain HTTP(S) file server with aria2c.

A site's own file server (an air-gapped site's copy of the publisher's files under one address)
gives no hashes: the publisher's list comes as data, and aria2c checks every file against its
SHA-256 as it downloads (``checksum=sha-256``), resumable (``--continue``: a cut file goes on from
where it stopped). aria2c reads its input, the token's header included, from its standard input:
nothing secret is in its argv or on disk. It honours the proxy variables (http_proxy, https_proxy,
all_proxy, no_proxy).
"""

from __future__ import annotations

from urllib.parse import quote

from ansible_collections.kimi_k3.serving.plugins.module_utils.model_hub_error import HubError

TOKEN_VARIABLE = "k3_model_weights_url_token"

# aria2c's exit status (its manual's EXIT STATUS) in words, with the fix.
CAUSES = {
    3: "a file was not found there (HTTP 404): check the address and that the copy holds every file of the list",
    6: "a network problem: check the address, the proxy variables (https_proxy, no_proxy) and the firewall",
    9: "no room left on the disk: free space or choose another folder",
    19: "the server's name did not resolve: check the address and the resolver",
    24: "the token was refused (HTTP 401/403): renew %s in the vault" % TOKEN_VARIABLE,
}


def input_text(source, token, files):
    """aria2c's input file: per file its address, its place in the staging folder, its SHA-256
    (files kept in Git on the Hub have a blob id instead: checked after the download) and the token."""
    lines = []
    for entry in files:
        lines.append("%s/%s" % (source["url"], quote(entry["path"])))
        lines.append("  out=%s" % entry["path"])
        if entry.get("sha256"):
            lines.append("  checksum=sha-256=%s" % entry["sha256"])
        if token:
            lines.append("  header=Authorization: Bearer %s" % token)
    return "\n".join(lines) + "\n"


def command(staging, workers, program="aria2c"):
    return [
        program,
        "--input-file=-",
        "--dir=%s" % staging,
        "--continue=true",
        "--check-integrity=true",
        "--auto-file-renaming=false",
        "--allow-overwrite=true",
        "--file-allocation=none",
        "--max-concurrent-downloads=%d" % max(1, workers),
        "--max-tries=3",
        "--retry-wait=2",
        "--console-log-level=error",
        "--summary-interval=0",
        "--download-result=hide",
    ]


def download(source, token, staging, workers, files, run):
    """Every file of ``files`` from ``source["url"]`` into ``staging`` (a complete file is kept);
    ``run``: the module's run_command."""
    try:
        status, out, _err = run(command(staging, workers), data=input_text(source, token, files))
    except OSError as exc:
        raise HubError("aria2c cannot run (%s): install aria2 on this host" % exc) from exc
    # A file unlike its SHA-256 (32) is left for the caller, which names every such file.
    if status not in (0, 32):
        cause = CAUSES.get(status, "aria2c ended with status %d" % status)
        detail = [
            line.split("errorCode=", 1)[1].partition(" ")[2].strip()
            for line in out.splitlines()
            if "errorCode=" in line
        ]
        raise HubError("%s: %s%s" % (source["url"], cause, " (aria2c: %s)" % detail[-1] if detail else ""))
