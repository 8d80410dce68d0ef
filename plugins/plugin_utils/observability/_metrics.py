# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Read counters from a Prometheus text exposition (vLLM's /metrics)."""

from __future__ import annotations

import re

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


def samples(text):
    """Yield (name, labels, value) for every sample line."""
    for line in (text or "").splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        labels = {m.group("key"): m.group("value") for m in _LABEL.finditer(match.group("labels") or "")}
        try:
            value = float(match.group("value"))
        except ValueError:
            continue
        yield match.group("name"), labels, value


def metric_sum(text, name, labels=None):
    """Sum of the samples of ``name`` whose labels include ``labels``; 0.0 when there are none."""
    want = labels or {}
    total = 0.0
    for sample_name, sample_labels, value in samples(text):
        if sample_name == name and all(sample_labels.get(k) == str(v) for k, v in want.items()):
            total += value
    return total
