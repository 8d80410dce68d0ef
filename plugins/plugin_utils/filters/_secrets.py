# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters that put k3_api_key and k3_admin_api_key where a planned service reads them (the plan
names places, never keys)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_auth import (
    resolve_secret_env,
    secret_file_content,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import secret_keys


@filter_errors
def _secret_env(spec, keys, admin=None):
    return resolve_secret_env(spec or {}, keys, admin)


@filter_errors
def _secret_file(spec, keys, admin=None):
    return secret_file_content(spec or {}, keys, admin)


def _api_key(keys, admin=None, client=False):
    """The deployment's own key (the admin key, else the first client key); ``client``: a client's."""
    clients = secret_keys(keys)
    admins = secret_keys(admin)
    order = clients + admins if client else admins + clients
    return order[0] if order else ""


class Filters:
    """kimi_k3.serving secret filters."""

    def filters(self):
        return {"secret_env": _secret_env, "secret_file": _secret_file, "api_key": _api_key}
