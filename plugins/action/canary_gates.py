# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Action plugin behind kimi_k3.serving.canary_gates: an upgrade's canary judged on the controller."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import BenchmarkError
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _canary_gates as gates

_PROBE = {"requests": 8, "max_tokens": 32, "concurrency": 2, "warmup": 4, "timeout": 120}
_THRESHOLDS = ("max_failed", "max_ttft_p99_ms", "min_output_throughput", "max_regression_percent", "regression_metrics")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(
        ("canary", "baseline", "model", "api_key", "ca_path", "thresholds", "gates", "prometheus", "hosts", "soak")
        + tuple(_PROBE)
    )
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        if self._play_context.check_mode:
            result.update(changed=False, skipped=True, msg="check mode: the canary was not probed")
            return result
        settings = {k: int(v if args.get(k) is None else args[k]) for k, v in _PROBE.items()}
        settings.update(model=args.get("model"), key=args.get("api_key") or "", ca_path=args.get("ca_path") or "")
        thresholds = {k: v for k, v in (args.get("thresholds") or {}).items() if k in _THRESHOLDS}
        canary, baseline = gates.paired_points(args.get("canary") or [], args.get("baseline") or [], settings)
        try:
            failures = gates.judge(canary, baseline, thresholds, args.get("gates") or [])
        except BenchmarkError as exc:
            result.update(failed=True, msg="canary gates: %s" % exc)
            return result
        lines = gates.side_by_side(canary, baseline)
        alerts = []
        prometheus, soak = args.get("prometheus") or {}, int(args.get("soak") or 0)
        if prometheus.get("url") and soak and not failures:
            try:
                alerts = gates.soak(prometheus, set(args.get("hosts") or []), soak)
            except (OSError, ValueError) as exc:
                alerts = ["Prometheus at %s did not answer: %s" % (prometheus["url"], exc)]
            failures += ["alert firing for the canary: %s" % a for a in alerts]
        elif not prometheus.get("url"):
            lines.append("no alert soak: the deployment has no monitoring host")
        result.update(changed=False, canary=canary, baseline=baseline, lines=lines, alerts=alerts, failures=failures)
        if failures:
            result.update(failed=True, msg="\n".join(["the canary failed its gates:"] + failures + lines))
        return result
