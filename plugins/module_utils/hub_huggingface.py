# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A checkpoint fetched from a Hugging Face compatible hub with the hub's own client.

``huggingface_hub`` lists the pinned revision's files with the publisher's hashes and downloads
them (resumable: a transfer cut half way goes on from where it stopped), into a staging folder
that the caller moves into place once every file is verified. It works against the Hub itself
and against any Hub-compatible mirror (an endpoint). It is imported here, at call time: the module
runs under a Python that has it (model_weights_fetch_python).
"""

from __future__ import annotations

import os

from ansible_collections.kimi_k3.serving.plugins.module_utils.model_hub_error import HubError


def _client():
    try:
        import huggingface_hub  # noqa: PLC0415 - on the fetch host's Python, not the controller's
        from huggingface_hub import errors  # noqa: PLC0415
    except ImportError as exc:
        raise HubError(
            "huggingface_hub is not importable by this Python (%s): set model_weights_fetch_python to a "
            "Python that has it, or let the role install its own (model_weights_fetch_install)" % exc
        ) from exc
    return huggingface_hub, errors


def _has_repo(api, source):
    """Whether the repository answers for its refs (a 404 on a revision is then the revision's)."""
    try:
        api.list_repo_refs(source["repo"])
    except Exception:  # noqa: BLE001 - any refusal: the repository is not there for this token
        return False
    return True


def _explain(exc, source, errors, api=None):
    endpoint = source.get("endpoint") or "the Hub"
    where = "%s at revision %s on %s" % (source["repo"], source["revision"], endpoint)
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(exc, errors.RevisionNotFoundError) or (status == 404 and api is not None and _has_repo(api, source)):
        return "revision %s not found in %s on %s: pin a commit the repository has" % (
            source["revision"],
            source["repo"],
            endpoint,
        )
    if isinstance(exc, errors.GatedRepoError):
        return "%s is gated: accept its terms with the account of the token, then run again" % where
    if isinstance(exc, errors.RepositoryNotFoundError) or status == 404:
        return "%s not found, or the token may not read it (set k3_model_weights_hf_token in the vault)" % where
    if status in (401, 403):
        return "the token was refused (HTTP %s) for %s: renew k3_model_weights_hf_token in the vault" % (status, where)
    cause = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if status is None:
        return (
            "cannot reach %s (%s): check the address, the proxy variables (HTTPS_PROXY, NO_PROXY) and the firewall"
            % (
                endpoint,
                cause,
            )
        )
    return "%s: %s" % (where, cause)


def hub_files(source, token):
    """The publisher's files of ``source`` ({repo, revision, endpoint}): path, size and hash."""
    hub, errors = _client()
    api = hub.HfApi(endpoint=source.get("endpoint") or None, token=token or False)
    try:
        tree = list(api.list_repo_tree(source["repo"], revision=source["revision"], recursive=True))
    except Exception as exc:  # noqa: BLE001 - every refusal of the hub is reported in words
        raise HubError(_explain(exc, source, errors, api)) from exc
    files = []
    for item in tree:
        if not isinstance(item, hub.hf_api.RepoFile):
            continue
        entry = {"path": item.path, "size": item.size}
        if item.lfs:
            entry["sha256"] = item.lfs.sha256
        else:
            entry["blob_id"] = item.blob_id
        files.append(entry)
    return sorted(files, key=lambda entry: entry["path"])


def download(source, token, staging, workers, files, run):  # noqa: ARG001 - the hub's client lists them itself
    """Every file of ``source`` into ``staging`` (what is already there at full size is kept)."""
    hub, errors = _client()
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        hub.snapshot_download(
            source["repo"],
            revision=source["revision"],
            local_dir=staging,
            endpoint=source.get("endpoint") or None,
            token=token or False,
            max_workers=workers,
        )
    except Exception as exc:  # noqa: BLE001 - every refusal of the hub is reported in words
        raise HubError(_explain(exc, source, errors)) from exc
