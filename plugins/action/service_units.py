# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Action plugin behind kimi_k3.serving.service_units: the module, and, only when a program the units
need is missing, the install steps (well-kept modules such as ansible.builtin.apt) before the module
runs again. On a host that has the programs, the whole job stays one round trip."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

MODULE = "kimi_k3.serving.service_units"


def _module_and_args(step, where):
    """``(module, args)`` of an install step or its fallback; raises ValueError naming what is wrong."""
    if not isinstance(step, dict) or not isinstance(step.get("module"), str) or not step["module"]:
        raise ValueError("%s needs module: a module's fully qualified name" % where)
    args = step.get("args") or {}
    if not isinstance(args, dict):
        raise ValueError("%s (%s): args must be a mapping" % (where, step["module"]))
    return step["module"], args


def install_steps(install):
    """The ``install`` argument as ``[{module, args, fallback, skip_in_check_mode}]`` (fallback: ``(module,
    args)`` or None); raises ValueError naming what is wrong."""
    steps = []
    for n, step in enumerate(install or []):
        module, args = _module_and_args(step, "install[%d]" % n)
        fallback = step.get("fallback")
        steps.append(
            {
                "module": module,
                "args": args,
                "fallback": _module_and_args(fallback, "install[%d].fallback" % n) if fallback else None,
                "skip_in_check_mode": bool(step.get("skip_in_check_mode")),
            }
        )
    return steps


def _run_step(step, execute, check_mode):
    """One install step (its fallback when it fails): ``(what it reports, the result)``."""
    if check_mode and step["skip_in_check_mode"]:
        return {"module": step["module"], "changed": False, "skipped": True}, {}
    module, done = step["module"], execute(step["module"], step["args"])
    if done.get("failed") and step["fallback"]:
        module, done = step["fallback"][0], execute(*step["fallback"])
    return {"module": module, "changed": bool(done.get("changed"))}, done


def apply(args, execute, check_mode=False):
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
    for step in steps:
        report, done = _run_step(step, execute, check_mode)
        installed.append(report)
        if done.get("failed"):
            msg = "installing %s with %s failed: %s" % (", ".join(missing), report["module"], done.get("msg", ""))
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
            result.update(apply(self._task.args, execute, check_mode=bool(self._play_context.check_mode)))
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
