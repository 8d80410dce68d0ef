# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Action plugin behind kimi_k3.serving.service_units: the module, and, only when a program the units
need is missing, the install steps (well-kept modules such as ansible.builtin.apt) before the module
runs again. On a host that has the programs, the whole job stays one round trip."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

MODULE = "kimi_k3.serving.service_units"


def install_steps(install):
    """The ``install`` argument as ``[(module, args)]``; raises ValueError naming what is wrong."""
    steps = []
    for n, step in enumerate(install or []):
        if not isinstance(step, dict) or not isinstance(step.get("module"), str) or not step["module"]:
            raise ValueError("install[%d] needs module: a module's fully qualified name" % n)
        args = step.get("args") or {}
        if not isinstance(args, dict):
            raise ValueError("install[%d] (%s): args must be a mapping" % (n, step["module"]))
        steps.append((step["module"], args))
    return steps


def apply(args, execute):
    """The module with ``args``, with the install steps between two calls when a program is missing.

    ``execute(module, module_args)`` runs a module on the host and returns its result.
    """
    args = dict(args)
    try:
        steps = install_steps(args.pop("install", None))
    except ValueError as exc:
        return {"failed": True, "msg": str(exc)}
    first = execute(MODULE, args)
    missing = first.get("missing_programs") or []
    if first.get("failed") or not missing:
        return first
    if not steps:
        return dict(first, failed=True, msg="%s missing, and no install step is given" % ", ".join(missing))
    installed = []
    for module, step_args in steps:
        done = execute(module, step_args)
        installed.append({"module": module, "changed": bool(done.get("changed"))})
        if done.get("failed"):
            msg = "installing %s with %s failed: %s" % (", ".join(missing), module, done.get("msg", ""))
            return {"failed": True, "msg": msg, "installed": installed, "missing_programs": missing}
    args.pop("programs", None)
    second = dict(execute(MODULE, args), installed=installed, missing_programs=missing)
    second["changed"] = bool(second.get("changed")) or any(step["changed"] for step in installed)
    return second


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)

        def execute(module, module_args):
            if module != MODULE and self._shared_loader_obj.action_loader.has_plugin(
                module, collection_list=self._task.collections
            ):
                return self._run_action(module, module_args, task_vars)
            return self._execute_module(module, module_args=module_args, task_vars=task_vars)

        try:
            result.update(apply(self._task.args, execute))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _run_action(self, module, module_args, task_vars):
        """An install step whose module is an action (ansible.builtin.package picks the host's package
        manager's module), run as that action would run in a task of its own."""
        task = self._task.copy()
        task.action, task.args = module, dict(module_args)
        action = self._shared_loader_obj.action_loader.get(
            module,
            task=task,
            connection=self._connection,
            play_context=self._play_context,
            loader=self._loader,
            templar=self._templar,
            shared_loader_obj=self._shared_loader_obj,
        )
        return action.run(task_vars=task_vars)
