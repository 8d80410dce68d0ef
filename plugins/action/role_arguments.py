# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Action plugin behind kimi_k3.serving.role_arguments: every role's variables on every host, checked
once on the controller."""

from __future__ import annotations

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _role_arguments as role_arguments


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("roles", "only"))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        roles = self._task.args.get("roles")
        if not isinstance(roles, dict) or not all(isinstance(h, list) for h in roles.values()):
            result.update(failed=True, msg="roles must map each role's name to the list of its hosts")
            return result
        hostvars, seen = task_vars["hostvars"], {}

        def read(host, names):
            if host not in seen:
                seen[host] = hostvars[host]
            own = seen[host]
            values = {}
            for name in names:
                if name in own:
                    try:
                        values[name] = own[name]
                    except AnsibleError:
                        # A value built from what the role or the run defines later (a role default, a
                        # fact): Ansible checks it when the role starts.
                        continue
            return values

        try:
            found = role_arguments.check(roles, read, self._task.args.get("only"))
        except ValueError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        result.update(changed=False, problems=found, checked=len(seen))
        if found:
            result.update(failed=True, msg="\n".join(["the inventory's role variables do not fit:"] + found))
        else:
            result["msg"] = "%d role(s) on %d host(s): every variable fits" % (len(roles), len(seen))
        return result
