# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters that put k3_api_key where a planned service reads it (the plan names places, never keys)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._plan_auth import (
    resolve_secret_env,
    secret_file_content,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils._variables import secret_keys


def _secret_env(spec, keys):
    try:
        return resolve_secret_env(spec or {}, keys)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from None


def _secret_file(spec, keys):
    try:
        return secret_file_content(spec or {}, keys)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from None


def _api_key(keys):
    found = secret_keys(keys)
    return found[0] if found else ""


class FilterModule:
    """kimi_k3.serving secret filters."""

    def filters(self):
        return {"secret_env": _secret_env, "secret_file": _secret_file, "api_key": _api_key}
