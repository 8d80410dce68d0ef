# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The evaluate_environment filter (its code: plugins/plugin_utils/filters/_evaluate.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._evaluate import Filters

DOCUMENTATION = r"""
name: evaluate_environment
version_added: 0.4.0
short_description: "The environment of an evaluation against an endpoint, without the key"
description:
  - >-
    KIMI_BASE_URL (the endpoint's C(/v1)), proxies emptied and C(NO_PROXY)/C(no_proxy) naming
    localhost and the endpoint's host, as the specification's section 7.2 exports them;
    C(INSPECT_LOG_DIR) and C(SSL_CERT_FILE) when given. The caller adds KIMI_API_KEY.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The endpoint, scheme://host:port (a trailing /v1 is kept)."
    type: str
    required: true
  log_dir:
    description: "The folder inspect writes its logs to."
    type: str
  tls_ca:
    description: "The CA file the endpoint's certificate is checked against."
    type: str
"""

EXAMPLES = r"""
- name: Run inspect with the environment
  ansible.builtin.command:
    argv: "{{ run.argv }}"
  environment: "{{ 'http://10.0.0.1:8000' | kimi_k3.serving.evaluate_environment | combine({'KIMI_API_KEY': key}) }}"
  no_log: true
"""

RETURN = r"""
_value:
  description: "Variable name to value."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.evaluate_environment."""

    def filters(self):
        return {"evaluate_environment": Filters().filters()["evaluate_environment"]}
