# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The one way a filter reports bad input: the collection's errors (ValueError and its kinds) become
AnsibleFilterError, with the message the code wrote, after a label where the filter gives one."""

from __future__ import annotations

import functools

from ansible.errors import AnsibleFilterError


def filter_errors(function=None, *, label=None, errors=(ValueError,)):
    """Decorate a filter: ``errors`` it raises become AnsibleFilterError("label: message").

    Used bare (``@filter_errors``) or with settings (``@filter_errors(label="env_file")``).
    """

    def decorate(func):
        @functools.wraps(func)
        def call(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except errors as exc:
                raise AnsibleFilterError("%s: %s" % (label, exc) if label else str(exc)) from None

        return call

    return decorate(function) if function is not None else decorate


def needs_plan(plan, name):
    """The plan, or ValueError naming the filter when ``plan`` is not one."""
    if not isinstance(plan, dict) or "hosts" not in plan:
        raise ValueError("%s needs the plan (k3_plan_result.plan): run the plan stage first" % name)
    return plan
