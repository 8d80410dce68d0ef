# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The roles' variables checked once on the controller (role_arguments, playbooks/role_vars.yml)."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _role_arguments as role_arguments

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / "playbooks"
# The playbooks whose roles start without Ansible's own check, and the checks that precede them.
UNCHECKED = ("site.yml", "preflight.yml", "prerequisites.yml", "verify.yml")


def read_from(values):
    return lambda host, names: {n: v for n, v in values.get(host, {}).items() if n in names}


def test_values_that_fit_pass_and_the_roles_defaults_are_not_read():
    values = {"h1": {"engine_health_timeout": "300", "engine_state": "started", "other": 1}}
    assert role_arguments.check({"engine": ["h1", "h2"]}, read_from(values)) == []


def test_every_problem_names_its_hosts_the_role_the_variable_and_the_fix():
    values = {h: {"engine_health_timeout": "abc", "engine_state": "run"} for h in ("d0", "d1")}
    values["d2"] = {"engine_state": "run"}
    found = role_arguments.check({"engine": ["d1", "d0", "d2"]}, read_from(values))
    assert found[0].startswith("hosts d0, d1: role engine: argument 'engine_health_timeout' is of type str")
    assert found[0].endswith(
        "Fix: give engine_health_timeout a value of type int, in the inventory or with -e (roles/engine/README.md)."
    )
    assert found[1] == (
        "hosts d0, d1, d2: role engine: value of engine_state must be one of: started, staged, stopped, status,"
        " absent, got: run. Fix: give engine_state a value of type str, one of started, staged, stopped, status,"
        " absent, in the inventory or with -e (roles/engine/README.md)."
    )
    assert len(found) == 2


def test_under_limit_only_the_runs_hosts_are_checked():
    values = {h: {"firewall_state": "gone"} for h in ("a", "b", "c")}
    (line,) = role_arguments.check({"firewall": ["a", "b", "c"]}, read_from(values), only=["c", "a"])
    assert line.startswith("hosts a, c: role firewall:")
    assert role_arguments.check({"firewall": ["b"]}, read_from(values), only=["a"]) == []


def test_many_hosts_with_one_problem_make_one_line():
    hosts = ["n%02d" % n for n in range(12)]
    values = {h: {"firewall_state": "gone"} for h in hosts}
    (line,) = role_arguments.check({"firewall": hosts}, read_from(values))
    assert line.startswith("hosts n00, n01, n02, n03, n04 and 7 more: role firewall: value of firewall_state")


def test_a_string_where_a_list_is_declared_is_taken_as_ansible_takes_it_and_a_dict_is_refused():
    fine = role_arguments.check({"firewall": ["h"]}, read_from({"h": {"firewall_client_networks": "10.0.0.0/8"}}))
    assert fine == []
    (line,) = role_arguments.check({"firewall": ["h"]}, read_from({"h": {"firewall_client_networks": {"a": 1}}}))
    assert line.startswith("host h: role firewall: argument 'firewall_client_networks' is of type dict")
    assert "Fix: give firewall_client_networks a value of type list of str" in line


def test_no_secret_is_shown():
    options = {
        "x_key": {"type": "str", "no_log": True, "choices": ["s3cr3t-a", "s3cr3t-b"]},
        "x_mode": {"type": "str", "choices": ["a", "b"]},
    }
    found = role_arguments.check(
        {"x": ["h"]},
        read_from({"h": {"x_key": "s3cr3t-value", "x_mode": "s3cr3t-value"}}),
        options_of=lambda role: options,
    )
    assert len(found) == 2 and not any("s3cr3t-value" in line for line in found), found
    assert "argument 'x_key' does not fit its declaration (its value, a secret, is not shown)" in found[0] + found[1]
    assert any("value of x_mode must be one of: a, b, got: ********" in line for line in found), found


def test_a_role_without_a_spec_is_refused():
    with pytest.raises(ValueError, match="role no_such_role: no argument spec"):
        role_arguments.check({"no_such_role": ["h"]}, read_from({}))


def _roles_unchecked():
    """The collection roles the playbooks start with rolespec_validate false, outside roles/."""
    found = set()
    for name in UNCHECKED:
        text = (PLAYBOOKS / name).read_text(encoding="utf-8")
        between = r"(?:(?:\s+#.*|\s+tasks_from: \w+)\n)*"
        found |= set(re.findall(r"name: kimi_k3\.serving\.(\w+)\n" + between + r"\s+rolespec", text))
    return found


def test_every_role_started_unchecked_is_checked_by_role_vars_first():
    text = (PLAYBOOKS / "role_vars.yml").read_text(encoding="utf-8")
    checked = set(re.findall(r"'(\w+)': ", text)) | {"nvidia", "rocm", "ascend"}
    assert "nvidia" in text and "'monitoring':" in text
    unchecked = _roles_unchecked()
    assert {"firewall", "engine", "verify", "model_weights", "preflight"} <= unchecked
    assert unchecked <= checked
    site = (PLAYBOOKS / "site.yml").read_text(encoding="utf-8")
    assert site.index("role_vars.yml") < site.index("preflight.yml")
    for name in ("scale.yml", "upgrade.yml", "verify.yml"):
        assert "import_playbook: role_vars.yml" in (PLAYBOOKS / name).read_text(encoding="utf-8"), name


@pytest.mark.parametrize("role", sorted(p.parent.parent.name for p in ROOT.glob("roles/*/meta/argument_specs.yml")))
def test_each_roles_own_defaults_fit_its_spec(role):
    """The defaults are not read by the check (the collection's own); those without a template fit."""
    path = ROOT / "roles" / role / "defaults" / "main.yml"
    defaults = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.exists() else {}
    options = role_arguments.role_options(role, root=str(ROOT))
    plain = {k: v for k, v in defaults.items() if k in options and "{{" not in yaml.safe_dump(v)}
    assert role_arguments.problems(role, plain, options) == []
