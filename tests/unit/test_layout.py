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
    # What those import in turn travels with them, and so on.
    todo = sorted(used & shipped)
    while todo:
        found = imported_module_utils(PLUGINS / "module_utils" / (todo.pop() + ".py"))
        todo += sorted((found & shipped) - used)
        used |= found
    assert shipped, "no module_utils at all"
    assert shipped <= used, "controller-only code in module_utils: %s" % sorted(shipped - used)


# plugins/plugin_utils by concern (docs/architecture.md#code-layout).
CONCERNS = {"plan", "platforms", "operations", "observability", "benchmark", "evaluate", "report", "filters", "data"}
# No file does several jobs: none over 500 lines.
MAX_LINES = 500


def test_plugin_utils_names_are_private_and_module_utils_never_imports_them():
    # (data/ holds files the roles ship to the hosts, e.g. the engines' key guard: not code of this side.)
    files = [p for p in (PLUGINS / "plugin_utils").rglob("*.py") if p.name != "__init__.py" and p.parent.name != "data"]
    assert files
    assert all(p.name.startswith("_") for p in files), [p.name for p in files if not p.name.startswith("_")]
    # module_utils never reaches into plugin_utils: a module shipped to a host would miss it.
    for p in (PLUGINS / "module_utils").glob("*.py"):
        assert "plugin_utils" not in p.read_text(encoding="utf-8"), p.name


def test_plugin_utils_is_grouped_by_concern():
    folders = {p.name for p in (PLUGINS / "plugin_utils").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == CONCERNS
    top = sorted(p.name for p in (PLUGINS / "plugin_utils").glob("*.py"))
    assert top == ["_paths.py"], top


def test_no_plugin_file_is_over_500_lines():
    sizes = {
        str(p.relative_to(PLUGINS)): len(p.read_text(encoding="utf-8").splitlines()) for p in PLUGINS.rglob("*.py")
    }
    assert {p: n for p, n in sizes.items() if n > MAX_LINES} == {}
