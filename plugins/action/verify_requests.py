# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Action plugin behind kimi_k3.serving.verify_requests: verify's requests in one pass, on the controller."""

from __future__ import annotations

import json
import time
import urllib.error

from ansible.module_utils.urls import open_url
from ansible.plugins.action import ActionBase

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._verify_requests import (
    Settings,
    verify_requests,
)

_SETTINGS = (
    "prompt",
    "max_tokens",
    "kv_context",
    "kv_repeat",
    "image_url",
    "models_tries",
    "models_delay",
    "unavailable_wait",
)


def http_fetch(api_key, ca_path):
    """``fetch(method, url, body, headers, timeout) -> (status, text)`` with the key and the CA file."""

    def fetch(method, url, body, headers, timeout):
        sent = {"Content-Type": "application/json"} if body is not None else {}
        sent.update(headers)
        if api_key:
            sent["Authorization"] = "Bearer " + api_key
        data = json.dumps(body) if body is not None else None
        try:
            with open_url(url, data=data, headers=sent, method=method, timeout=timeout, ca_path=ca_path or None) as r:
                return r.status, r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode("utf-8", "replace")
        except (urllib.error.URLError, ValueError) as exc:
            raise OSError(str(getattr(exc, "reason", exc))) from None

    return fetch


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("endpoint", "checks", "api_key", "ca_path", "request_timeout", *_SETTINGS))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        endpoint, checks = args.get("endpoint"), args.get("checks")
        if not isinstance(endpoint, dict) or not endpoint.get("url") or not isinstance(checks, dict):
            result.update(failed=True, msg="verify_requests needs endpoint (with its url) and checks: the plan's")
            return result
        if self._play_context.check_mode:
            result.update(changed=False, skipped=True, msg="check mode: no request was sent")
            return result
        settings = Settings(sleep=time.sleep, timeout=int(args.get("request_timeout") or 600))
        for name in _SETTINGS:
            if args.get(name) not in (None, ""):
                setattr(settings, name, args[name])
        fetch = http_fetch(args.get("api_key") or "", args.get("ca_path") or "")
        out, lines, failure = verify_requests(fetch, endpoint, checks, settings)
        result.update(out, lines=lines, changed=False)
        if failure:
            result.update(failed=True, msg=failure)
        return result
