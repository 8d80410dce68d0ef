# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Starting a host's planned units: which to enable, start, restart or reload, in one systemctl call
per kind of action. Used by the service_units module (``module`` is its AnsibleModule).
"""

from __future__ import annotations

import datetime


class Systemd:
    """The systemctl calls the module makes (one per kind of action, every unit at once)."""

    def __init__(self, module):
        self.module = module
        self.systemctl = module.get_bin_path("systemctl", required=True)

    def run(self, *args, check=True):
        """systemctl's output; with ``check`` a failure fails the module, naming the call."""
        rc, out, err = self.module.run_command([self.systemctl] + list(args))
        if rc != 0 and check:
            self.module.fail_json(msg="systemctl %s failed (rc=%s): %s" % (" ".join(args), rc, (err or out).strip()))
        return out

    def show(self, units, properties, *options):
        """``{unit: {property: value}}`` of ``units`` (names without .service), read in one call."""
        names = [u + ".service" for u in units]
        out = self.run("show", *options, "--property=" + ",".join(["Id", *properties]), "--", *names)
        found, current = {}, {}
        for line in (out or "").splitlines() + [""]:
            if not line.strip():
                if current.get("Id"):
                    found[current["Id"][: -len(".service")]] = current
                current = {}
                continue
            key, value = line.split("=", 1) if "=" in line else (line, "")
            current[key] = value
        return found

    def states(self, units):
        """``{unit: (ActiveState, UnitFileState)}`` of ``units``, read in one call."""
        shown = self.show(units, ["ActiveState", "UnitFileState"])
        return {u: (v.get("ActiveState", ""), v.get("UnitFileState", "")) for u, v in shown.items()}

    def started(self, units):
        """``{unit: seconds}``: when each unit's main process last started (units never started are left out)."""
        shown = self.show(units, ["ExecMainStartTimestamp"], "--timestamp=us+utc")
        out = {}
        for unit, values in shown.items():
            seconds = stamp_seconds(values.get("ExecMainStartTimestamp", ""))
            if seconds is not None:
                out[unit] = seconds
        return out


def stamp_seconds(text):
    """A systemd timestamp shown with ``--timestamp=us+utc`` (``Sat 2026-12-05 12:51:25.795570 UTC``) as
    seconds since the epoch; None for an empty or other text. (``--timestamp=unix`` drops the fraction:
    a unit started in the second its files were written would seem older than them.)"""
    try:
        moment = datetime.datetime.strptime(text.strip(), "%a %Y-%m-%d %H:%M:%S.%f UTC")
    except ValueError:
        return None
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()  # noqa: UP017 (hosts may run Python < 3.11)


RUNNING = ("active", "activating", "reloading")
PHASES = ["node0", "followers"]
# The argument spec of one unit to start (a module's list of them).
START_OPTIONS = {
    "name": {"type": "str", "required": True},
    "unit": {"type": "str", "required": True},
    "phase": {"type": "str", "choices": PHASES, "default": "node0"},
    "probe": {"type": "list", "elements": "str"},
}


def start_plan(units, states, restart, reload=()):
    """Which units to enable, start, restart and reload: ``(enable, start, restart, reload)`` lists.

    ``restart``: the units to restart (a file of theirs changed, asked for, or their probe failed);
    ``reload``: those to reload when they run (only files they read again on a reload changed)."""
    enable, start, again, again_read = [], [], [], []
    for unit in units:
        active, file_state = states.get(unit, ("", ""))
        if file_state != "enabled":
            enable.append(unit)
        if unit in restart:
            again.append(unit)
        elif active not in RUNNING:
            start.append(unit)
        elif unit in reload:
            again_read.append(unit)
    return enable, start, again, again_read


def service_changes(changed_files):
    """``(restart, reload)``: the services with a changed file that restarts them, and those with only
    files that reload them."""
    restart = {f["service"] for f in changed_files if f.get("change", "restart") in (None, "restart")}
    reload = {f["service"] for f in changed_files if f.get("change") == "reload"} - restart
    return restart, reload


def later_phases_idle(module, systemd):
    """True when a later call for the start phases this one left out would enable, start, restart and
    reload nothing: their units enabled and running, none asked to restart, every probe passing."""
    later = [item for item in module.params["start"] if item["phase"] not in module.params["phases"]]
    units = [item["unit"] for item in later]
    restart = {item["unit"] for item in later if item["name"] in module.params["restart"]}
    for item in later:
        if item.get("probe") and item["unit"] not in restart and module.run_command(item["probe"])[0] != 0:
            return False
    return not any(start_plan(units, systemd.states(units) if units else {}, restart))


def run_starts(module, systemd, changed_files):
    """Enable, start, restart and reload the units of the selected phases; returns the four lists."""
    selected = [item for item in module.params["start"] if item["phase"] in module.params["phases"]]
    if not selected:
        return [], [], [], []
    wanted = [item["unit"] for item in selected]
    to_restart, to_reload = service_changes(changed_files)
    to_restart |= set(module.params["restart"])
    restart = {item["unit"] for item in selected if item["name"] in to_restart}
    reload = {item["unit"] for item in selected if item["name"] in to_reload}
    for item in selected:
        if item.get("probe") and item["unit"] not in restart:
            if module.run_command(item["probe"])[0] != 0:
                restart.add(item["unit"])
    # systemctl show answers for a unit that is not written yet too (in check mode): inactive, no file state.
    plan = start_plan(wanted, systemd.states(wanted), restart, reload)
    if not module.check_mode:
        enable, begin, again, again_read = plan
        for verb, units in (("enable", enable), ("start", begin), ("restart", again), ("reload", again_read)):
            if units:
                systemd.run(verb, "--", *[u + ".service" for u in units])
    return plan
