# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A checkpoint's files listed and fetched with its hub's own client (source["hub"] chooses it).

Each hub's client gives the publisher's files of a pinned revision (path, size and hash) and
downloads them, resumable, into a staging folder; every refusal becomes a HubError naming cause
and fix. A client's library is imported when it is used: the module runs under a Python that has
it. A plain file store (an HTTP(S) server, an S3 bucket) gives no list: the publisher's list comes
as data, and its client (aria2c, rclone) fetches the files that list names.
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.module_utils import (
    hub_huggingface,
    hub_modelscope,
    store_s3,
    store_url,
)
from ansible_collections.kimi_k3.serving.plugins.module_utils.model_hub_error import HubError

CLIENTS = {"huggingface": hub_huggingface, "modelscope": hub_modelscope, "url": store_url, "s3": store_s3}
STORES = ("url", "s3")

__all__ = ["CLIENTS", "STORES", "HubError", "download", "hub_files"]


def hub_files(source, token):
    """The publisher's files of ``source`` ({hub, repo, revision, endpoint}): path, size and hash
    (a hub's only: a store's list is given as data)."""
    return CLIENTS[source["hub"]].hub_files(source, token)


def download(source, token, staging, workers, files, run):
    """Every file of ``files`` (the publisher's list) of ``source`` into ``staging``: what is already
    there at full size is kept. ``run``: the module's run_command, for the stores' programs."""
    return CLIENTS[source["hub"]].download(source, token, staging, workers, files, run)
