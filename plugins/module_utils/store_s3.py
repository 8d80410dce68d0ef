# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A checkpoint fetched from an S3-compatible bucket with rclone.

rclone copies the files of the publisher's list (the list comes as data: a bucket gives MD5
ETags at best) from ``s3://bucket/prefix`` into the staging folder, side by side; a file already
there at its size is kept. It is configured by environment variables only (no configuration
file): the credentials reach it in its environment, never in its argv. With no credentials it uses
the host's own (AWS_* variables, an instance role), as the AWS tools do. The caller checks every
file against the publisher's SHA-256 afterwards.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from ansible_collections.kimi_k3.serving.plugins.module_utils.model_hub_error import HubError

TOKEN_VARIABLE = "k3_model_weights_s3_credentials"

# What rclone's log says (the S3 error codes it passes on) in words, with the fix; first match wins.
CAUSES = (
    (
        ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "status code: 403", "StatusCode: 403"),
        "the credentials were refused: renew %s (access_key_id, secret_access_key) in the vault" % TOKEN_VARIABLE,
    ),
    (("NoSuchBucket", "directory not found"), "the bucket or its folder does not exist: check the address"),
    (
        ("connection refused", "no such host", "i/o timeout", "dial tcp", "certificate"),
        "cannot reach the endpoint: check the address, the proxy variables (HTTPS_PROXY, NO_PROXY) and the firewall",
    ),
    (("not found", "NoSuchKey"), "a file of the list is not in the bucket: check the address and the copy"),
)


def environment(source, token, inherited):
    """What rclone's environment adds to ``inherited`` (the module's: the proxy variables pass
    through) for an on-the-fly S3 remote (``:s3:``), credentials included."""
    env = {"RCLONE_CONFIG": os.devnull, "RCLONE_S3_PROVIDER": "Other" if source.get("endpoint") else "AWS"}
    # Debian's rclone (1.60) fails on AWS_CA_BUNDLE ("unable to load custom CA bundle"; an empty
    # one is ignored): the same bundle is given as its own --ca-cert.
    if inherited.get("AWS_CA_BUNDLE"):
        env["AWS_CA_BUNDLE"] = ""
        env["RCLONE_CA_CERT"] = inherited.get("RCLONE_CA_CERT") or inherited["AWS_CA_BUNDLE"]
    if source.get("endpoint"):
        env["RCLONE_S3_ENDPOINT"] = source["endpoint"]
    token = token or {}
    if token.get("access_key_id"):
        env["RCLONE_S3_ACCESS_KEY_ID"] = token["access_key_id"]
        env["RCLONE_S3_SECRET_ACCESS_KEY"] = token.get("secret_access_key") or ""
        if token.get("session_token"):
            env["RCLONE_S3_SESSION_TOKEN"] = token["session_token"]
    else:
        env["RCLONE_S3_ENV_AUTH"] = "true"
    return env


def command(source, staging, listing, workers, program="rclone"):
    parts = urlsplit(source["url"])
    return [
        program,
        "copy",
        ":s3:%s%s" % (parts.netloc, parts.path.rstrip("/")),
        staging,
        "--files-from-raw=%s" % listing,
        "--transfers=%d" % max(1, workers),
        "--retries=3",
        "--low-level-retries=5",
        "--log-level=ERROR",
    ]


def _cause(log):
    for needles, words in CAUSES:
        if any(needle.lower() in log.lower() for needle in needles):
            return words
    lines = [line for line in log.splitlines() if line.strip()]
    return lines[-1] if lines else "rclone failed"


def download(source, token, staging, workers, files, run):
    """Every file of ``files`` from the bucket into ``staging`` (a file there at its size is kept);
    ``run``: the module's run_command."""
    bookkeeping = os.path.join(staging, ".cache")
    os.makedirs(bookkeeping, exist_ok=True)
    listing = os.path.join(bookkeeping, "files.txt")
    with open(listing, "w", encoding="utf-8") as handle:
        handle.writelines(entry["path"] + "\n" for entry in files)
    try:
        status, _out, err = run(
            command(source, staging, listing, workers), environ_update=environment(source, token, os.environ)
        )
    except OSError as exc:
        raise HubError("rclone cannot run (%s): install rclone on this host" % exc) from exc
    if status:
        raise HubError("%s: %s" % (source["url"], _cause(err)))
