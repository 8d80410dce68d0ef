#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Documentation of the kimi_k3.serving.verify_requests action (the work: plugins/action/verify_requests.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verify_requests
short_description: Prove that the deployment serves, with a client's requests, in one pass
version_added: 0.1.0
description:
  - Sends what a client sends to the plan's endpoint and checks each answer, in this order, stopping at the
    first failure. C(GET /v1/models) lists the served model (tried O(models_tries) times, O(models_delay)
    seconds apart, while the endpoint does not answer 200); a chat completion returns tokens (tried again while
    the endpoint answers 503, up to O(unavailable_wait) seconds).
  - For P/D, a fresh long prompt makes the decode engines count its KV cache as received through the
    connector and not computed (C(vllm:prompt_tokens_by_source_total)); a second fresh prompt is tried
    before this check fails, since the first request after an engine restart can still miss the transfer.
  - Where the profile has vision, an image request is answered. Every data-parallel rank counts a request
    pinned to it with C(X-data-parallel-rank) through node 0's API (C(vllm:prompt_tokens_total)).
  - Runs on the controller only; sends nothing in check mode. The key goes only into the requests'
    C(Authorization) header, never into the result.
options:
  endpoint:
    description: The plan's C(endpoint) (its C(url), C(service) and C(host)).
    type: dict
    required: true
  checks:
    description: The plan's C(verify) (served_model_name, vision, dp_pinning, kv_transfer).
    type: dict
    required: true
  api_key:
    description: The bearer key the requests carry; empty sends none.
    type: str
    default: ""
  ca_path:
    description: The CA file an https endpoint's certificate is checked against; empty uses the system's.
    type: str
    default: ""
  prompt:
    description: The prompt of the chat completion.
    type: str
    default: "What is 17 + 25?"
  max_tokens:
    description: Token budget of the chat completion and the image request.
    type: int
    default: 64
  request_timeout:
    description: Seconds each request may take.
    type: int
    default: 600
  kv_context:
    description: Text repeated into the prompt of the KV-transfer check (several KV blocks long).
    type: str
  kv_repeat:
    description: How many times O(kv_context) is repeated.
    type: int
    default: 10
  image_url:
    description: The image of the multimodal check (a data URL).
    type: str
  models_tries:
    description: How many times C(/v1/models) is asked while it does not answer 200.
    type: int
    default: 10
  models_delay:
    description: Seconds between those tries.
    type: float
    default: 3
  unavailable_wait:
    description:
      - Seconds the chat completion is tried again (every O(models_delay) seconds) while the endpoint answers 503,
        as a router does while it has no available worker of a role; vllm-router counts a restarted worker back
        after two of its health checks (60 s apart by default).
    type: float
    default: 180
attributes:
  check_mode:
    support: full
    description: Sends nothing and reports skipped.
  diff_mode:
    support: none
    description: Changes nothing.
  idempotent:
    support: full
    description: Sends requests and changes nothing.
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Send the requests through the endpoint
  kimi_k3.serving.verify_requests:
    endpoint: "{{ plan.endpoint }}"
    checks: "{{ plan.verify }}"
    api_key: "{{ k3_admin_api_key }}"
    ca_path: /etc/kimi-k3/tls/ca.pem
  register: verified

- name: Show what the deployment answered
  ansible.builtin.debug:
    msg: "{{ verified.lines }}"
"""

RETURN = r"""
lines:
  description: One sentence per passed check (the answer's tokens and text, the KV cache that moved, the ranks).
  returned: always
  type: list
  elements: str
models:
  description: The model names C(/v1/models) listed.
  returned: success
  type: list
  elements: str
completion_tokens:
  description: Tokens of the chat completion.
  returned: success
  type: int
kv_transfer:
  description: For P/D, the prompt's tokens, those decode received (external) and computed (local), and moved.
  returned: success, with P/D
  type: dict
dp_ranks:
  description: The data-parallel ranks that served a request pinned to them.
  returned: success
  type: list
  elements: dict
"""
