# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Action plugin behind kimi_k3.serving.benchmark_report: the report of a benchmark run folder, on the controller."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import BenchmarkError
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._report import ReportSettings, report


def _exit_codes(results):
    """{name, rc} per point from the registered loop of the run task (or such entries as given)."""
    out = []
    for entry in results or ():
        if not isinstance(entry, dict):
            continue
        item = entry.get("item") if isinstance(entry.get("item"), dict) else entry
        name = item.get("name")
        if not name:
            continue
        rc = entry.get("rc")
        if rc is None and (entry.get("failed") or entry.get("skipped")):
            # An async run that timed out, or a point that never ran: no exit status.
            rc = "no exit status (%s)" % (entry.get("msg") or "skipped")
        out.append({"name": name, "rc": rc})
    return out


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("run_dir", "points", "results", "gates", "baseline", "target", "regression_metrics"))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        if not args.get("run_dir") or not isinstance(args.get("points"), list):
            result.update(failed=True, msg="benchmark_report needs run_dir and points (the benchmark_points result)")
            return result
        if self._play_context.check_mode:
            result.update(changed=False, skipped=True, msg="check mode: no benchmark ran, nothing to report")
            return result
        try:
            settings = ReportSettings(
                results=_exit_codes(args.get("results")),
                gates=args.get("gates") or [],
                baseline_dir=args.get("baseline") or "",
                target_info=args.get("target"),
                regression_metrics=args.get("regression_metrics") or None,
            )
            out = report(args["run_dir"], args["points"], settings)
        except BenchmarkError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        result.update(out, changed=True)
        return result
