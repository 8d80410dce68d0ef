# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving accuracy-evaluation filters (logic in plugin_utils/evaluate/: _runs.py, _scores.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.evaluate import _runs, _scores
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors


def evaluate_runs(settings):
    return _runs.eval_runs(settings)


def evaluate_environment(endpoint, log_dir=None, tls_ca=None):
    return _runs.environment(endpoint, log_dir, tls_ca)


def evaluate_retry_argv(log_file, inspect, max_connections=16):
    return _runs.retry_argv(inspect, log_file, max_connections)


def evaluate_newest_logs(found, runs_results=None):
    return _scores.newest_logs(found, runs_results)


def evaluate_unfinished(scores):
    return _scores.unfinished(scores)


def evaluate_scores(logs):
    return _scores.read_scores(logs)


def evaluate_gate_failures(scores, gates, run_dir, host="localhost"):
    return _scores.gate_failures(scores, gates, run_dir, host)


def evaluate_kept_logs(scores, run_dir):
    return _scores.kept_logs(scores, run_dir)


def evaluate_table(scores, gates=None):
    return _scores.score_table(scores, gates)


def evaluate_service_failures(result):
    return _scores.service_failures(result)


class Filters:
    """kimi_k3.serving evaluation filters."""

    def filters(self):
        return {
            f.__name__: filter_errors(f)
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
