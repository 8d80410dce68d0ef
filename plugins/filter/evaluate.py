# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving accuracy-evaluation filters (logic in plugin_utils/_evaluate.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.plugin_utils import _evaluate


def _wrap(func):
    def call(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except _evaluate.EvaluateError as exc:
            raise AnsibleFilterError(str(exc)) from None

    call.__name__ = func.__name__
    call.__doc__ = func.__doc__
    return call


def evaluate_runs(settings):
    return _evaluate.eval_runs(settings)


def evaluate_environment(endpoint, log_dir=None, tls_ca=None):
    return _evaluate.environment(endpoint, log_dir, tls_ca)


def evaluate_retry_argv(log_file, inspect, max_connections=16):
    return _evaluate.retry_argv(inspect, log_file, max_connections)


def evaluate_newest_logs(found, runs_results=None):
    return _evaluate.newest_logs(found, runs_results)


def evaluate_unfinished(scores):
    return _evaluate.unfinished(scores)


def evaluate_scores(logs):
    return _evaluate.read_scores(logs)


def evaluate_gate_failures(scores, gates, run_dir, host="localhost"):
    return _evaluate.gate_failures(scores, gates, run_dir, host)


def evaluate_kept_logs(scores, run_dir):
    return _evaluate.kept_logs(scores, run_dir)


def evaluate_table(scores, gates=None):
    return _evaluate.score_table(scores, gates)


def evaluate_service_failures(result):
    return _evaluate.service_failures(result)


class FilterModule:
    """kimi_k3.serving evaluation filters."""

    def filters(self):
        return {
            f.__name__: _wrap(f)
            for f in (
                evaluate_runs,
                evaluate_environment,
                evaluate_retry_argv,
                evaluate_newest_logs,
                evaluate_unfinished,
                evaluate_scores,
                evaluate_gate_failures,
                evaluate_kept_logs,
                evaluate_table,
                evaluate_service_failures,
            )
        }
