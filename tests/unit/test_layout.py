"""Where the collection's Python lives (the community.docker / ansible.utils convention).

``plugins/module_utils`` is shipped to the targets with the modules that import it, so it holds only
what a module imports; the controller's code (planner, profiles, prerequisite and monitoring logic)
is in ``plugins/plugin_utils`` under private names.
"""

import ast

from conftest import ROOT

PLUGINS = ROOT / "plugins"
PACKAGE = "ansible_collections.kimi_k3.serving.plugins.module_utils"


def imported_module_utils(path):
    """The module_utils names a Python file imports (both import forms)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == PACKAGE:
                names.update(alias.name for alias in node.names)
            elif node.module.startswith(PACKAGE + "."):
                names.add(node.module[len(PACKAGE) + 1 :].split(".")[0])
    return names


def test_module_utils_holds_only_what_the_modules_import():
    shipped = {p.stem for p in (PLUGINS / "module_utils").glob("*.py") if p.stem != "__init__"}
    used = set()
    for module in (PLUGINS / "modules").glob("*.py"):
        used |= imported_module_utils(module)
    # What those import in turn travels with them.
    for name in sorted(used & shipped):
        used |= imported_module_utils(PLUGINS / "module_utils" / (name + ".py"))
    assert shipped, "no module_utils at all"
    assert shipped <= used, "controller-only code in module_utils: %s" % sorted(shipped - used)


def test_plugin_utils_names_are_private_and_module_utils_never_imports_them():
    files = [p for p in (PLUGINS / "plugin_utils").glob("*.py") if p.name != "__init__.py"]
    assert files
    assert all(p.name.startswith("_") for p in files), [p.name for p in files if not p.name.startswith("_")]
    # module_utils never reaches into plugin_utils: a module shipped to a host would miss it.
    for p in (PLUGINS / "module_utils").glob("*.py"):
        assert "plugin_utils" not in p.read_text(encoding="utf-8"), p.name
