# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The planner's problem lines and small shared helpers."""

from __future__ import annotations


class Problem:
    """One reason a plan cannot be made."""

    def __init__(self, host, variable, message, fix):
        self.host = host or "all"
        self.variable = variable
        self.message = message
        self.fix = fix

    def __str__(self):
        return "host %s: %s: %s. Fix: %s" % (self.host, self.variable, self.message, self.fix)

    def as_dict(self):
        return {"host": self.host, "variable": self.variable, "message": self.message, "fix": self.fix}


class PlanError(Exception):
    """Every problem found in an inventory."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def var_name(name):
    return "k3_" + name


def coerce(value, default):
    """Inventory values may arrive as strings (INI); follow the default's type."""
    if isinstance(default, bool) and isinstance(value, str):
        if value.lower() in ("true", "yes", "1", "on"):
            return True
        if value.lower() in ("false", "no", "0", "off"):
            return False
    if isinstance(default, int) and not isinstance(default, bool) and isinstance(value, str):
        try:
            return int(value, 10)
        except ValueError:
            return value
    return value
