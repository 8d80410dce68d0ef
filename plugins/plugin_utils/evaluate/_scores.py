# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The accuracy evaluation's results, read on the controller: the scores from inspect's log
headers, the newest log per benchmark, what did not finish, the gates and the score table."""

from __future__ import annotations

import json

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.evaluate._runs import BENCHMARKS, EvaluateError, _number


def _header(value, where):
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as err:
            raise EvaluateError("%s is not an inspect log header (not JSON: %s)" % (where, err))
    if not isinstance(value, dict) or "eval" not in value or "status" not in value:
        raise EvaluateError("%s is not an inspect log header (no eval or status)" % where)
    return value


def score_of(benchmark, header, log=None):
    """One benchmark's result from its log header (``inspect log dump --header-only``, or a JSON log):
    {benchmark, title, status, accuracy, stderr, scorer, samples, completed, log, error}."""
    if benchmark not in BENCHMARKS:
        raise EvaluateError("unknown benchmark %r: known are %s" % (benchmark, ", ".join(BENCHMARKS)))
    where = "the %s log %s" % (BENCHMARKS[benchmark]["title"], log or "")
    header = _header(header, where.strip())
    task = str(header["eval"].get("task", ""))
    if task.replace("-", "_").rsplit("/", maxsplit=1)[-1] != BENCHMARKS[benchmark]["task"]:
        raise EvaluateError("%s is the log of task %r, not %s" % (where.strip(), task, BENCHMARKS[benchmark]["task"]))
    results = header.get("results") or {}
    out = {
        "benchmark": benchmark,
        "title": BENCHMARKS[benchmark]["title"],
        "status": header["status"],
        "accuracy": None,
        "stderr": None,
        "scorer": None,
        "samples": int(results.get("total_samples") or 0),
        "completed": int(results.get("completed_samples") or 0),
        "log": log,
        "error": ((header.get("error") or {}).get("message") or "")[:500] or None,
    }
    for score in results.get("scores") or []:
        metrics = score.get("metrics") or {}
        if "accuracy" in metrics:
            out["accuracy"] = float(metrics["accuracy"]["value"])
            out["stderr"] = float((metrics.get("stderr") or {}).get("value") or 0.0)
            out["scorer"] = score.get("name")
            break
    if out["status"] == "success" and out["accuracy"] is None:
        raise EvaluateError("%s finished but holds no accuracy score" % where.strip())
    return out


def newest_logs(found, runs_results=None):
    """The newest log of each benchmark: found = the registered results of an ansible.builtin.find
    per run (each with item = the run, files = [{path, mtime}]). A benchmark without a log is an
    error naming it, its folder and, from runs_results (the registered inspect runs), inspect's end."""
    if isinstance(found, dict):
        found = found.get("results")
    if not isinstance(found, (list, tuple)):
        raise EvaluateError("newest_logs needs the registered results of a find per benchmark, not %r" % (found,))
    ends = {}
    for result in (runs_results or {}).get("results", []) if isinstance(runs_results, dict) else runs_results or []:
        run = result.get("item") or {}
        # The last line of inspect's output: the exception that ended it (a traceback's end).
        lines = [
            line.strip() for line in (result.get("stderr") or result.get("msg") or "").splitlines() if line.strip()
        ]
        ends[run.get("benchmark")] = "inspect exited %s: %s" % (result.get("rc"), lines[-1] if lines else "no output")
    out, missing = [], []
    for result in found:
        run = result.get("item") or {}
        logs = [f for f in result.get("files") or [] if str(f.get("path", "")).endswith((".eval", ".json"))]
        if not logs:
            missing.append(
                "%s wrote no log in %s%s"
                % (
                    run.get("title", run.get("benchmark")),
                    run.get("log_dir"),
                    ": " + ends[run.get("benchmark")] if run.get("benchmark") in ends else "",
                )
            )
            continue
        newest = max(logs, key=lambda f: (float(f.get("mtime") or 0), f["path"]))
        out.append({"benchmark": run.get("benchmark"), "title": run.get("title"), "log": newest["path"]})
    if missing:
        raise EvaluateError("; ".join(missing))
    return out


def read_scores(logs):
    """logs: [{benchmark, header, log}] (the header as dumped, text or mapping), or the registered
    results of a ``inspect log dump --header-only`` loop over newest_logs -> their results."""
    if isinstance(logs, dict) and "results" in logs:
        logs = logs["results"]
    if not isinstance(logs, (list, tuple)):
        raise EvaluateError("the logs must be a list of {benchmark, header, log}, not %r" % (logs,))
    out = []
    for item in logs:
        if not isinstance(item, dict):
            raise EvaluateError("a log entry must be a mapping, not %r" % (item,))
        if "header" not in item and "stdout" in item:
            item = {
                "benchmark": (item.get("item") or {}).get("benchmark"),
                "header": item["stdout"],
                "log": (item.get("item") or {}).get("log"),
            }
        out.append(score_of(item.get("benchmark"), item.get("header"), item.get("log")))
    return out


def kept_logs(scores, run_dir):
    """The results with kept = the log's copy in the run folder (run_dir/<benchmark>/<file>)."""
    return [
        dict(
            result,
            kept="%s/%s/%s" % (str(run_dir).rstrip("/"), result["benchmark"], str(result["log"]).rsplit("/", 1)[-1]),
        )
        for result in scores
    ]


def unfinished(scores):
    """The results whose run did not finish (for inspect eval-retry)."""
    return [result for result in scores if result["status"] != "success"]


# --------------------------------------------------------------------------------------------
# Gates
# --------------------------------------------------------------------------------------------
def gate_thresholds(gates, selected=None):
    """{benchmark: minimum accuracy (0 to 1)}; a benchmark without one is reported, not gated."""
    gates = gates or {}
    if not isinstance(gates, dict):
        raise EvaluateError("evaluate_gates must be a mapping of benchmark to minimum accuracy, not %r" % (gates,))
    out = {}
    for name, value in gates.items():
        if name not in BENCHMARKS:
            raise EvaluateError(
                "evaluate_gates names unknown benchmark %r: known are %s" % (name, ", ".join(BENCHMARKS))
            )
        if value is None:
            continue
        out[name] = _number(value, "evaluate_gates.%s (an accuracy)" % name, 0, 1)
    if selected is not None:
        out = {k: v for k, v in out.items() if k in selected}
    return out


def gate_failures(scores, gates, run_dir, host="localhost"):
    """A message per benchmark that failed: a run that did not finish, or an accuracy under its gate.
    Each names the benchmark, its score, the threshold and the log folder (the one on the controller;
    eval-retry runs where inspect wrote the log: on host)."""
    thresholds = gate_thresholds(gates)
    failures = []
    for score in scores:
        name, title = score["benchmark"], score["title"]
        folder = "%s/%s" % (str(run_dir).rstrip("/"), name)
        if score["status"] != "success":
            failures.append(
                "%s did not finish (status %s, %d of %d samples%s); logs in %s; resume it%s with "
                "`inspect eval-retry %s`"
                % (
                    title,
                    score["status"],
                    score["completed"],
                    score["samples"],
                    ": %s" % score["error"] if score["error"] else "",
                    folder,
                    "" if host in ("localhost", "127.0.0.1", None) else " on %s" % host,
                    score["log"] or folder,
                )
            )
            continue
        threshold = thresholds.get(name)
        if threshold is not None and score["accuracy"] < threshold:
            failures.append(
                "%s scored %.4f, below its gate %.4f (evaluate_gates.%s); logs in %s (inspect view start --log-dir %s)"
                % (title, score["accuracy"], threshold, name, folder, folder)
            )
    return failures


def score_table(scores, gates=None):
    """The scores as text lines: benchmark, accuracy ± stderr, samples, gate and verdict."""
    thresholds = gate_thresholds(gates)
    rows = [("benchmark", "accuracy", "stderr", "samples", "gate", "result")]
    for result in scores:
        gate = thresholds.get(result["benchmark"])
        if result["status"] != "success":
            verdict = "NOT FINISHED (%s)" % result["status"]
        elif gate is None:
            verdict = "reported"
        else:
            verdict = "pass" if result["accuracy"] >= gate else "FAIL"
        rows.append(
            (
                result["title"],
                "-" if result["accuracy"] is None else "%.4f" % result["accuracy"],
                "-" if result["stderr"] is None else "%.4f" % result["stderr"],
                "%d/%d" % (result["completed"], result["samples"]),
                "-" if gate is None else "%.4f" % gate,
                verdict,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def service_failures(result):
    """The failed checks of service_check.py's JSON answer, one message each."""
    if isinstance(result, (str, bytes)):
        try:
            result = json.loads(result)
        except ValueError as err:
            raise EvaluateError("the service check did not answer JSON: %s" % err)
    if not isinstance(result, dict) or not isinstance(result.get("checks"), list) or not result["checks"]:
        raise EvaluateError("the service check answered no checks: %r" % (result,))
    base = result.get("base_url", "the endpoint")
    return [
        "%s: %s check failed: %s" % (base, item["check"], item["detail"])
        for item in result["checks"]
        if not item.get("ok")
    ]
