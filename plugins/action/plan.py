# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Action plugin behind kimi_k3.serving.plan: plan the whole inventory once, on the controller."""

from __future__ import annotations

import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.kimi_k3.serving.plugins.module_utils.planner import (
    ROLE_GROUPS,
    PlanError,
    build_plan,
    plan_files,
)

# Host facts the planner reads besides the k3_* variables.
EXTRA_HOSTVARS = ("ansible_host", "ansible_memtotal_mb")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("dest", "profile_dir", "groups"))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        dest = args.get("dest")
        profile_dir = args.get("profile_dir")
        group_names = args.get("groups") or list(ROLE_GROUPS)

        inventory = self._inventory_input(task_vars, group_names)
        try:
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
        result.update(plan=plan, summary=files["summary.txt"], changed=False)
        if dest:
            dest = os.path.abspath(os.path.expanduser(str(dest)))
            changed, diffs = self._write(dest, files)
            result["changed"] = changed
            result["dest"] = dest
            result["files"] = sorted(files)
            if self._play_context.diff and diffs:
                result["diff"] = diffs
        return result

    def _inventory_input(self, task_vars, group_names):
        groups = task_vars.get("groups", {})
        hostvars = task_vars.get("hostvars", {})
        out_groups = {g: list(groups.get(g, [])) for g in group_names}
        out_vars = {}
        for host in {h for hosts in out_groups.values() for h in hosts}:
            hv = hostvars[host]
            data = {}
            for key in hv.keys():
                if key.startswith("k3_") or key in EXTRA_HOSTVARS:
                    data[key] = self._templar.template(hv[key])
            out_vars[host] = data
        return {"groups": out_groups, "hostvars": out_vars}

    def _write(self, dest, files):
        """Write the plan files; in check mode only report. Returns (changed, diffs)."""
        changed = False
        diffs = []
        wanted = set()
        for rel, content in sorted(files.items()):
            path = os.path.join(dest, rel)
            wanted.add(path)
            old = None
            if os.path.exists(path):
                with open(path, encoding="utf-8") as handle:
                    old = handle.read()
            if old == content:
                continue
            changed = True
            diffs.append({"before_header": path, "after_header": path, "before": old or "", "after": content})
            if self._task.check_mode:
                continue
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".k3plan.")
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(content)
                os.chmod(tmp, 0o755 if rel.endswith(".sh") else 0o644)
                os.replace(tmp, path)
            except OSError as exc:
                raise AnsibleActionFail("cannot write %s: %s" % (path, exc)) from exc
        # Launch scripts of services no longer in the plan are stale: remove them.
        scripts = os.path.join(dest, "scripts")
        if os.path.isdir(scripts):
            for root, _dirs, names in os.walk(scripts):
                for name in names:
                    path = os.path.join(root, name)
                    if path not in wanted:
                        changed = True
                        diffs.append({"before_header": path, "after_header": "(removed)", "before": "", "after": ""})
                        if not self._task.check_mode:
                            os.unlink(path)
        return changed, diffs
