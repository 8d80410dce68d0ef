# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""How a module waits for planned services' health (module_utils/service_wait.py's WAIT_OPTIONS)."""

from __future__ import annotations


class ModuleDocFragment:
    """kimi_k3.serving.health_wait."""

    DOCUMENTATION = r"""
options:
  api_key:
    description:
      - A bearer key sent with every health request (C(Authorization) header), for front services whose
        health route needs one (vllm-router with inbound keys). Never logged.
      - Empty sends none.
    type: str
    default: ""
  ca_path:
    description:
      - CA file an https health URL's certificate is checked against (k3_tls_ca); empty uses the system's CAs.
    type: str
    default: ""
  timeout:
    description: Seconds to wait for the services to become healthy.
    type: int
    default: 900
  delay:
    description: Seconds between health polls.
    type: float
    default: 2
  journal_lines:
    description: Journal lines returned for a service that did not become healthy.
    type: int
    default: 60
"""
