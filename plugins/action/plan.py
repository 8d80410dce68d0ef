# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Action plugin behind kimi_k3.serving.plan: plan the whole inventory once, on the controller."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._releases import (
    applied_by,
    record,
    redacted,
    release_id,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_inputs import MONITORING_GROUP
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_output import write_files
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import (
    FACT_VARIABLES,
    ROLE_GROUPS,
    PlanError,
    Problem,
    build_plan,
    plan_files,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import load_contract
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._file import REPORT_FILE, report_file


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("dest", "profile_dir", "groups", "release_dir"))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        dest = args.get("dest")
        profile_dir = args.get("profile_dir")
        group_names = args.get("groups") or [*ROLE_GROUPS, MONITORING_GROUP]

        try:
            inventory = self._inventory_input(task_vars, group_names)
            plan = build_plan(inventory, profile_dir)
        except PlanError as exc:
            result.update(
                failed=True,
                msg="The inventory cannot be planned (nothing was changed):\n"
                + "\n".join(str(p) for p in exc.problems),
                problems=[p.as_dict() for p in exc.problems],
            )
            return result

        files = plan_files(plan)
        by = applied_by(task_vars)
        result.update(
            plan=plan, summary=files["summary.txt"], changed=False, release={"id": release_id(plan), "by": by}
        )
        if args.get("release_dir"):
            result["release"] = self._record(args["release_dir"], plan, inventory, by)
        if dest:
            dest = os.path.abspath(os.path.expanduser(str(dest)))
            # The page a person reads, with Graphviz's picture of the cluster; without dot it is
            # still written (a note in the picture's place) and the run warns, naming the package.
            files[REPORT_FILE], warning = report_file(plan, inventory["groups"])
            if warning:
                result.setdefault("warnings", []).append(warning)
            changed, diffs = self._write(dest, files)
            result["changed"] = changed
            result["dest"] = dest
            result["files"] = sorted(files)
            result["report"] = os.path.join(dest, REPORT_FILE)
            if self._play_context.diff and diffs:
                result["diff"] = diffs
        return result

    def _inventory_input(self, task_vars, group_names):
        groups = task_vars.get("groups", {})
        hostvars = task_vars.get("hostvars", {})
        out_groups = {g: list(groups.get(g, [])) for g in group_names}
        out_vars = {}
        problems = []
        internal = {d.name for d in load_contract().section("internal")}
        for host in sorted({h for hosts in out_groups.values() for h in hosts}):
            hv = hostvars[host]
            data = {}
            for key in hv.keys():
                if (key.startswith("k3_") and key not in internal) or key in FACT_VARIABLES:
                    try:
                        data[key] = self._templar.template(hv[key])
                    except Exception as exc:  # an undefined name or bad Jinja in the inventory
                        problems.append(
                            Problem(host, key, "its value cannot be templated (%s)" % exc, "fix the Jinja in %s" % key)
                        )
            out_vars[host] = data
        if problems:
            raise PlanError(problems)
        return {"groups": out_groups, "hostvars": out_vars}

    def _record(self, folder, plan, inventory, by):
        """Keep the plan as a release on the controller (once per plan; not in check mode)."""
        secrets = {d.name for d in load_contract().by_name.values() if d.type == "secret"}
        folder = os.path.abspath(os.path.expanduser(str(folder)))
        try:
            release, _new = record(folder, plan, redacted(inventory["hostvars"], secrets), by, self._task.check_mode)
        except OSError as exc:
            raise AnsibleActionFail("cannot keep the release in %s: %s" % (folder, exc)) from exc
        return release

    def _write(self, dest, files):
        """Write the plan files; in check mode only report. Returns (changed, diffs)."""
        try:
            return write_files(dest, files, self._task.check_mode)
        except OSError as exc:
            raise AnsibleActionFail("cannot write the plan to %s: %s" % (dest, exc)) from exc
