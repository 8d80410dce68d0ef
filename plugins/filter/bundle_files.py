# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The bundle_files filter (its code: plugins/plugin_utils/filters/_units.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._units import Filters

DOCUMENTATION = r"""
name: bundle_files
version_added: 0.3.0
short_description: "The files of planned services a support bundle takes, and how each is redacted"
description:
  - >-
    Per service: its unit and configuration files whole (C(plain)), its environment file with the
    values of secret variables redacted (C(env)), its secret files withheld (C(secret)).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Services of the plan."
    type: list
    elements: dict
    required: true
  config_dir:
    description: "The configuration folder (where the environment files are)."
    type: str
    required: true
  unit_dir:
    description: "Where the units are."
    type: str
    default: /etc/systemd/system
"""

EXAMPLES = r"""
- name: This host's part of the bundle
  kimi_k3.serving.support_bundle:
    host: "{{ inventory_hostname }}"
    dest: /tmp/k3-support.tar.gz
    files: "{{ services | kimi_k3.serving.bundle_files('/etc/kimi-k3') }}"
"""

RETURN = r"""
_value:
  description: "Mappings with path and kind (plain, env or secret)."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.bundle_files."""

    def filters(self):
        return {"bundle_files": Filters().filters()["bundle_files"]}
