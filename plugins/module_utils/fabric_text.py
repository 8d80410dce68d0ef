# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Small readers the fabric tools' parsers share (module_utils fabric_collective, fabric_perftest)."""

from __future__ import annotations


def first_match(pattern, lines):
    """The match of ``pattern`` in the first line it is found in, or None."""
    for line in lines:
        match = pattern.search(line)
        if match:
            return match
    return None


def to_int(value):
    """``value`` as an int, None staying None."""
    return None if value is None else int(value)


def to_float(value):
    """``value`` as a float, None staying None."""
    return None if value is None else float(value)
