# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The benchmark's points: the scenarios (plugins/plugin_utils/data/benchmark_scenarios.yml) with
their overrides, lengths fitted to the max model length, the sweep's concurrencies, and one point
per AISBench scenario and per concurrency of each vllm_bench scenario."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import yaml

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import DATA_DIR
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import (
    BenchmarkError,
    number,
    positive_int,
)

SCENARIO_FILE = os.path.join(DATA_DIR, "benchmark_scenarios.yml")
TOOLS = ("ais_bench", "vllm_bench")
DATASET_TYPES = ("synthetic", "prefix_cache")
# Fewest output tokens a scaled scenario keeps (or the scenario's own, when smaller).
MIN_OUTPUT = 16


@dataclass(frozen=True)
class LengthFit:
    """How lengths are fitted to the max model length: ``margin`` tokens kept free (the chat
    template's own), the input counted ``1 + expansion`` times, and with ``scale`` lengths that do
    not fit shrink (without it they are refused). The values are checked where they are used."""

    margin: int = 64
    scale: bool = True
    expansion: float = 0.3


def load_scenarios(path=None):
    """The scenarios by name, from ``path`` or the collection's scenario file."""
    with open(path or SCENARIO_FILE, encoding="utf-8") as handle:
        return (yaml.safe_load(handle) or {})["scenarios"]


def scale_lengths(input_len, output_len, max_model_len, *, fit=None, what="scenario"):
    """(input, output, scaled): the lengths that fit ``max_model_len`` less ``fit.margin`` tokens.

    The input is counted ``1 + fit.expansion`` times: a load generator's prompt of N tokens may
    reach the server as more (AISBench decodes random token ids to text, which the server tokenizes
    again, behind the chat template). Lengths that fit are kept. Otherwise, with ``fit.scale``, both
    shrink by the same factor, the output keeping at least MIN_OUTPUT tokens (or its own length when
    smaller); without it they are refused. ``what`` names the lengths in the messages."""
    fit = fit or LengthFit()
    input_len = positive_int("%s: input_len" % what, input_len)
    output_len = positive_int("%s: output_len" % what, output_len)
    max_model_len = positive_int("the max model length", max_model_len)
    margin = int(fit.margin)
    if margin < 0:
        raise BenchmarkError("the length margin must be 0 or more, not %r" % margin)
    grow = 1.0 + number("the length expansion", fit.expansion, 0, 10)
    budget = max_model_len - margin
    need = input_len * grow + output_len
    if need <= budget:
        return input_len, output_len, False
    if not fit.scale:
        raise BenchmarkError(
            "%s: input_len %d (counted %g times) + output_len %d = %d tokens do not fit the max model length %d "
            "less a margin of %d (%d): lower the lengths, or let them be scaled (benchmark_scale_lengths: true)"
            % (what, input_len, grow, output_len, math.ceil(need), max_model_len, margin, budget)
        )
    least_out = min(output_len, MIN_OUTPUT)
    if budget < least_out + grow:
        raise BenchmarkError(
            "%s: the max model length %d less a margin of %d leaves %d tokens, too few for 1 input and %d output "
            "tokens: lower benchmark_length_margin" % (what, max_model_len, margin, budget, least_out)
        )
    factor = budget / need
    out = max(least_out, int(math.floor(output_len * factor)))
    return int(math.floor((budget - out) / grow)), out, True


def sweep_concurrencies(top=None, explicit=None):
    """The sweep's concurrencies: ``explicit`` as given (sorted, unique), else the powers of two below
    ``top`` and ``top`` itself (1, 2, 4, ..., top)."""
    if explicit:
        if not isinstance(explicit, (list, tuple)):
            raise BenchmarkError("the sweep's concurrencies must be a list of whole numbers, not %r" % (explicit,))
        return sorted({positive_int("a sweep concurrency", c) for c in explicit})
    top = positive_int("the sweep's top concurrency", top)
    out, c = [], 1
    while c < top:
        out.append(c)
        c *= 2
    return out + [top]


def _check_selection(selected, overrides, scenarios):
    if not isinstance(selected, (list, tuple)) or not selected:
        raise BenchmarkError(
            "benchmark_scenarios must be a non-empty list of scenario names: %s" % ", ".join(sorted(scenarios))
        )
    for name in (overrides or {}).keys():
        if name not in scenarios:
            raise BenchmarkError(
                "benchmark_scenario_overrides: no benchmark scenario %r: the scenarios are %s"
                % (name, ", ".join(sorted(scenarios)))
            )


def _scenario(name, scenarios, overrides):
    """The settings of scenario ``name``, its overrides applied."""
    if not isinstance(name, str) or name not in scenarios:
        raise BenchmarkError("no benchmark scenario %r: the scenarios are %s" % (name, ", ".join(sorted(scenarios))))
    spec = dict(scenarios[name])
    extra = (overrides or {}).get(name) or {}
    if not isinstance(extra, dict):
        raise BenchmarkError("the overrides of scenario %s must be a mapping, not %r" % (name, extra))
    unknown = sorted(set(extra) - set(spec) - {"concurrency", "prefix_len"})
    if unknown:
        raise BenchmarkError(
            "scenario %s has no setting %s: it has %s" % (name, ", ".join(unknown), ", ".join(sorted(spec)))
        )
    spec.update(extra)
    if spec.get("tool") not in TOOLS:
        raise BenchmarkError("scenario %s: tool must be one of %s, not %r" % (name, ", ".join(TOOLS), spec.get("tool")))
    return spec


def _base_point(name, spec, max_model_len, fit):
    """What every point of scenario ``name`` has: its tool, fitted lengths and request rate."""
    in_len, out_len, scaled = scale_lengths(
        spec["input_len"], spec["output_len"], max_model_len, fit=fit, what="scenario %s" % name
    )
    rate = number("scenario %s: request_rate" % name, spec.get("request_rate", 0), 0)
    return {
        "scenario": name,
        "tool": spec["tool"],
        "description": spec.get("description", ""),
        "input_len": in_len,
        "output_len": out_len,
        "scaled": scaled,
        "requested": {"input_len": int(spec["input_len"]), "output_len": int(spec["output_len"])},
        "request_rate": rate,
    }


def _ais_point(name, spec, base):
    """The one point of an AISBench scenario: its concurrency, request count and dataset."""
    dataset = spec.get("dataset_type", "synthetic")
    if dataset not in DATASET_TYPES:
        raise BenchmarkError(
            "scenario %s: dataset_type must be one of %s, not %r" % (name, ", ".join(DATASET_TYPES), dataset)
        )
    repeat = number("scenario %s: repeat_rate" % name, spec.get("repeat_rate", 0), 0, 1)
    if dataset == "synthetic" and repeat:
        raise BenchmarkError(
            "scenario %s: repeat_rate %s needs dataset_type prefix_cache (synthetic prompts share no prefix)"
            % (name, spec.get("repeat_rate"))
        )
    conc = positive_int("scenario %s: concurrency" % name, spec.get("concurrency"))
    return dict(
        base,
        name="%s-c%d" % (name, conc),
        concurrency=conc,
        requests=positive_int("scenario %s: data_num" % name, spec.get("data_num")),
        dataset_type=dataset,
        repeat_rate=repeat,
        prefix_len=int(math.floor(repeat * base["input_len"])),
    )


def _sweep_points(name, spec, base, sweep):
    """One point per concurrency of a vllm_bench scenario: its own, else the sweep's."""
    per = positive_int("scenario %s: prompts_per_concurrency" % name, spec.get("prompts_per_concurrency", 4))
    least = positive_int("scenario %s: min_prompts" % name, spec.get("min_prompts", 1))
    concs = [spec["concurrency"]] if spec.get("concurrency") is not None else sweep
    if not concs:
        raise BenchmarkError("scenario %s is a sweep: give it concurrencies (benchmark_sweep_concurrencies)" % name)
    return [
        dict(base, name="%s-c%d" % (name, conc), concurrency=conc, requests=max(least, per * conc))
        for conc in sweep_concurrencies(explicit=concs if isinstance(concs, (list, tuple)) else [concs])
    ]


def plan_points(selected, max_model_len, *, sweep=None, fit=None, overrides=None):
    """One point per AISBench scenario and per concurrency of each vllm_bench scenario.

    ``sweep``: the concurrencies of the vllm_bench scenarios (see sweep_concurrencies); ``fit``:
    how the lengths fit ``max_model_len`` (LengthFit); ``overrides``: per scenario, settings that
    replace its own."""
    scenarios = load_scenarios()
    _check_selection(selected, overrides, scenarios)
    points = []
    for name in selected:
        spec = _scenario(name, scenarios, overrides)
        base = _base_point(name, spec, max_model_len, fit)
        if spec["tool"] == "ais_bench":
            points.append(_ais_point(name, spec, base))
        else:
            points += _sweep_points(name, spec, base, sweep)
    names = [p["name"] for p in points]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BenchmarkError("benchmark_scenarios lists a scenario twice: %s" % ", ".join(dup))
    return points
