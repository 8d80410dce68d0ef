# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""An upgrade's roll: the canary first, then the other groups, and where it pauses.

The canary is the first ``canary`` groups of each role among those the upgrade rolls (or the groups
named in ``canary_groups``), restarted together as the first batch; its gates run before any other
group restarts. The other groups follow ``serial`` at a time (rolling.batches: roles alternate, a
role is never all out at once while it has another group). ``pause_after`` stops the run once that
many groups are on the new release (at a batch's end, so a canary of two roles is never split): the
rest stay on the release they run, and the next run of upgrade.yml resumes with them.

The baseline of the canary's gates is, per role, the groups the upgrade has not reached yet: they
still run the release before.
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _rolling as rolling


def _whole(name, value, low=0):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise rolling.RollingError("%s must be a whole number, %d or more (got %r)" % (name, low, value))
    return value


def _canary(roll, canary, canary_groups):
    """The canary's group ids (plan order)."""
    if canary_groups:
        unknown = [g for g in canary_groups if g not in {r["id"] for r in roll}]
        if unknown:
            raise rolling.RollingError(
                "canary_groups: %s %s not among the groups this upgrade rolls (%s)"
                % (", ".join(unknown), "is" if len(unknown) == 1 else "are", ", ".join(r["id"] for r in roll) or "none")
            )
        return [r["id"] for r in roll if r["id"] in canary_groups]
    taken, out = {}, []
    for group in roll:
        if taken.get(group["role"], 0) < canary:
            taken[group["role"]] = taken.get(group["role"], 0) + 1
            out.append(group["id"])
    return out


def upgrade_roll(plan, changed, canary=1, canary_groups=None, serial=1, pause_after=0):
    """The upgrade's batches: ``{canary, batches, paused, baseline, outages, groups}``.

    ``changed``: host to the names of its services whose files changed or that still run an earlier
    release. ``batches``: group ids per batch, the canary's first; ``paused``: the groups left for the
    next run (``pause_after``); ``baseline``: per role of the canary, the groups still on the release
    before, which its gates compare it with; ``groups``: each rolled group's role, url and hosts.
    """
    _whole("canary", canary)
    _whole("pause_after", pause_after)
    groups = rolling.replica_groups(plan)
    wanted = set(rolling.changed_groups(plan, changed))
    roll = [g for g in groups if g["id"] in wanted]
    chosen = _canary(roll, canary, list(canary_groups or []))
    rest = rolling.batches(groups, serial, [g["id"] for g in roll if g["id"] not in chosen])
    batches = ([chosen] if chosen else []) + rest["batches"]
    outages = _canary_outages(groups, chosen) + rest["outages"]
    kept, paused, done = [], [], 0
    for batch in batches:
        if pause_after and done >= pause_after:
            paused += batch
            continue
        kept.append(batch)
        done += len(batch)
    baseline = {}
    for group in roll:
        if group["id"] in chosen:
            continue
        role = group["role"]
        if any(c["role"] == role for c in roll if c["id"] in chosen):
            baseline.setdefault(role, []).append(group["id"])
    return {
        "canary": chosen,
        "batches": kept,
        "paused": paused,
        "baseline": baseline,
        "outages": outages,
        "groups": {g["id"]: {"role": g["role"], "url": g["url"], "hosts": g["hosts"]} for g in roll},
    }


def _canary_outages(groups, chosen):
    """A sentence for each role the canary takes whole."""
    out = []
    for role in dict.fromkeys(g["role"] for g in groups if g["id"] in chosen):
        members = [g["id"] for g in groups if g["role"] == role]
        if all(m in chosen for m in members):
            out.append(
                "the canary takes every %s group (%s): that role stops serving until it is back"
                % (role, ", ".join(members))
            )
    return out
