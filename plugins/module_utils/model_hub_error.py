# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The error every hub client raises: a refusal of the hub, its cause in words."""

from __future__ import annotations


class HubError(Exception):
    """A refusal of the hub, with its cause in words (the caller names host and checkpoint)."""
