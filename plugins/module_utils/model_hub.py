# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A checkpoint's files listed and fetched with its hub's own client (source["hub"] chooses it).

Each client gives the publisher's files of a pinned revision (path, size and hash) and downloads
them, resumable, into a staging folder; every refusal becomes a HubError naming cause and fix.
A client's library is imported when it is used: the module runs under a Python that has it.
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.module_utils import hub_huggingface, hub_modelscope
from ansible_collections.kimi_k3.serving.plugins.module_utils.model_hub_error import HubError

CLIENTS = {"huggingface": hub_huggingface, "modelscope": hub_modelscope}

__all__ = ["CLIENTS", "HubError", "download", "hub_files"]


def hub_files(source, token):
    """The publisher's files of ``source`` ({hub, repo, revision, endpoint}): path, size and hash."""
    return CLIENTS[source["hub"]].hub_files(source, token)


def download(source, token, staging, workers):
    """Every file of ``source`` into ``staging`` (what is already there at full size is kept)."""
    return CLIENTS[source["hub"]].download(source, token, staging, workers)
