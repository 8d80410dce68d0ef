# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A checkpoint fetched from ModelScope (or a ModelScope-compatible mirror) with its own SDK.

``modelscope_hub``, the engine of the ``modelscope`` SDK, lists the revision's files with the
publisher's SHA-256 of every file and downloads them, resumable (a cut file is kept as
``.incomplete`` and goes on from there), into the staging folder. Its lock files go under the
staging folder's ``.cache``, which the caller removes with the staging folder's other bookkeeping.
"""

from __future__ import annotations

import os

from ansible_collections.kimi_k3.serving.plugins.module_utils.model_hub_error import HubError

TOKEN_VARIABLE = "k3_model_weights_modelscope_token"


def _client():
    try:
        import modelscope_hub  # noqa: PLC0415 - on the fetch host's Python, not the controller's
        from modelscope_hub import errors  # noqa: PLC0415
    except ImportError as exc:
        raise HubError(
            "modelscope is not importable by this Python (%s): set model_weights_fetch_python to a Python "
            "that has it, or let the role install its own (model_weights_fetch_install)" % exc
        ) from exc
    return modelscope_hub, errors


def _api(hub, source, token):
    return hub.HubApi(endpoint=source.get("endpoint") or None, token=token or None)


def _has_repo(hub, source, token):
    """Whether the repository answers at its default revision (a 404 is then the revision's)."""
    try:
        _api(hub, source, token).list_repo_files(source["repo"], "model", recursive=False)
    except Exception:  # noqa: BLE001 - any refusal: the repository is not there for this token
        return False
    return True


def _first_line(exc):
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _explain(exc, source, token, hub, errors):
    endpoint = source.get("endpoint") or "ModelScope"
    where = "%s at revision %s on %s" % (source["repo"], source["revision"], endpoint)
    cause = _first_line(exc)
    if isinstance(exc, errors.FileDownloadError) and exc.failed_files:
        # The SDK checks each file against its SHA-256 (a mismatch is retried, then removed).
        failed = "; ".join("%s: %s" % (path, _first_line(why)) for path, why in sorted(exc.failed_files.items()))
        if all(isinstance(why, errors.FileIntegrityError) for why in exc.failed_files.values()):
            return "not as the publisher's, nothing moved into place: %s" % failed
        return "%s: %d of %s files failed: %s" % (where, len(exc.failed_files), exc.total, failed)
    if isinstance(exc, (errors.AuthenticationError, errors.PermissionDeniedError)):
        return "the token was refused (%s) for %s: renew %s in the vault" % (cause, where, TOKEN_VARIABLE)
    if isinstance(exc, errors.NotExistError):
        if _has_repo(hub, source, token):
            return "revision %s not found in %s on %s: pin a tag or commit the repository has" % (
                source["revision"],
                source["repo"],
                endpoint,
            )
        return "%s not found, or the token may not read it (set %s in the vault)" % (where, TOKEN_VARIABLE)
    if isinstance(exc, (errors.NetworkError, ConnectionError, TimeoutError)):
        return (
            "cannot reach %s (%s): check the address, the proxy variables (HTTPS_PROXY, NO_PROXY) and the "
            "firewall" % (endpoint, cause)
        )
    return "%s: %s" % (where, cause)


def hub_files(source, token):
    """The publisher's files of ``source`` ({repo, revision, endpoint}): path, size and SHA-256."""
    hub, errors = _client()
    try:
        listed = _api(hub, source, token).list_repo_files(
            source["repo"], "model", revision=source["revision"], recursive=True
        )
    except Exception as exc:  # noqa: BLE001 - every refusal of the hub is reported in words
        raise HubError(_explain(exc, source, token, hub, errors)) from exc
    files = [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in listed if f.type != "tree"]
    missing = [entry["path"] for entry in files if not entry["sha256"]]
    if missing:
        raise HubError(
            "%s on %s lists no SHA-256 for %s: nothing can be checked against the publisher"
            % (source["repo"], source.get("endpoint") or "ModelScope", ", ".join(missing))
        )
    return sorted(files, key=lambda entry: entry["path"])


def download(source, token, staging, workers, files, run):  # noqa: ARG001 - the hub's client lists them itself
    """Every file of ``source`` into ``staging`` (what is already there at full size is kept)."""
    os.environ["MODELSCOPE_CACHE"] = os.path.join(staging, ".cache")
    hub, errors = _client()
    try:
        _api(hub, source, token).download_repo(
            source["repo"], "model", revision=source["revision"], local_dir=staging, max_workers=workers
        )
    except Exception as exc:  # noqa: BLE001 - every refusal of the hub is reported in words
        raise HubError(_explain(exc, source, token, hub, errors)) from exc
