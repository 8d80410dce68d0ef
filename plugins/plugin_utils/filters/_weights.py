# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters over plugin_utils/platforms/_weights.py and plugin_utils/operations/_model_sources.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors, needs_plan
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._model_sources import (
    fanout,
    model_published,
    model_sources,
    transfer_watch,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._weights import manifest_differences


@filter_errors
def _model_sources(plan, fetch):
    return model_sources(needs_plan(plan, "model_sources"), fetch)


@filter_errors
def _model_fanout(checkpoints, holding, hosts, seed=None):
    return fanout(list(checkpoints or []), dict(holding or {}), list(hosts or []), seed or None)


class Filters:
    """kimi_k3.serving checkpoint filters."""

    def filters(self):
        return {
            "manifest_differences": filter_errors(manifest_differences),
            "model_sources": _model_sources,
            "model_fanout": _model_fanout,
            "transfer_watch": filter_errors(transfer_watch),
            "model_published": filter_errors(model_published),
        }
