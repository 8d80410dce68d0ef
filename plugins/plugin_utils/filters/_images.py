# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters over plugin_utils/platforms/_images.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._images import (
    image_differences,
    image_fanout,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._registry_mirror import (
    mirror_config,
    mirror_site,
)


class Filters:
    """kimi_k3.serving container image filters."""

    def filters(self):
        return {
            "image_differences": filter_errors(image_differences),
            "image_fanout": filter_errors(image_fanout),
            "mirror_config": filter_errors(mirror_config),
            "mirror_site": filter_errors(mirror_site),
        }
