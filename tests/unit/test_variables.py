"""The variable contract: complete, consistent with the profiles and roles, and its value checks."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._profiles import list_profiles, load_profile
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import (
    Declaration,
    Invalid,
    check_value,
    load_contract,
)

CONTRACT = load_contract()
K3 = re.compile(r"\bk3_[a-z0-9_]+")


def declared_parameters():
    """k3_<name> -> {"deployment", "group"}: where the profiles and fragments declare each parameter."""
    out = {}
    for path in sorted((ROOT / "profiles").glob("*.yml")):
        data = yaml.safe_load(path.read_text()) or {}
        for name in data.get("parameters") or {}:
            out.setdefault("k3_" + name, set()).add("deployment")
        for spec in (data.get("services") or {}).values():
            for name in (spec or {}).get("parameters") or {}:
                out.setdefault("k3_" + name, set()).add("group")
    return out


def test_every_profile_parameter_is_declared_with_a_fitting_scope():
    params = declared_parameters()
    for name, where in params.items():
        decl = CONTRACT.get(name)
        assert decl is not None and decl.section == "parameters", "%s is not declared in variables.yml" % name
        if "group" in where:
            assert decl.scope == "group", "%s is a per-group parameter of a profile: declare scope group" % name
        assert decl.description, name


def test_every_declared_parameter_is_read_by_a_profile():
    params = declared_parameters()
    unused = [d.name for d in CONTRACT.section("parameters") if d.name not in params]
    assert not unused, "declared but read by no profile: %s" % unused


def test_every_default_of_every_profile_matches_its_declaration():
    for name in list_profiles():
        data = load_profile(name)
        values = dict(data.get("parameters") or {})
        for spec in (data.get("services") or {}).values():
            values.update((spec or {}).get("parameters") or {})
        for pname, value in values.items():
            check_value(CONTRACT.parameter(pname), value)  # raises Invalid on a mismatch
        for variant in (data.get("variants") or {}).values():
            for pname, value in variant["parameters"].items():
                check_value(CONTRACT.parameter(pname), value)


def test_some_profile_has_variants_and_k3_variant_is_declared():
    assert any(load_profile(name).get("variants") for name in list_profiles())
    decl = CONTRACT.get("k3_variant")
    assert (decl.section, decl.type, decl.scope, decl.spec.get("nullable")) == ("host", "str", "deployment", True)


def test_every_k3_variable_the_collection_reads_is_declared():
    paths = [ROOT / "site.yml"]
    for folder in ("roles", "playbooks", "extensions/molecule"):
        paths += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".yml", ".j2") and p.is_file()]
    missing = {}
    for path in paths:
        for name in K3.findall(path.read_text()):
            if CONTRACT.get(name) is None:
                missing.setdefault(name, str(path.relative_to(ROOT)))
    assert not missing, "k3_* variables read but not declared: %s" % missing


def test_role_knobs_come_from_the_argument_specs():
    knobs = {d.name: d for d in CONTRACT.section("role")}
    for name in ("k3_nvidia_driver_upgrade", "k3_container_source", "k3_model_weights_sources", "k3_rocm_sys_root"):
        assert name in knobs, name
    upgrade = knobs["k3_nvidia_driver_upgrade"]
    assert (upgrade.spec["role"], upgrade.spec["option"], upgrade.type) == ("nvidia", "nvidia_driver_upgrade", "bool")
    assert knobs["k3_container_source"].spec["choices"] == ["distribution", "docker"]
    for decl in knobs.values():
        specs = yaml.safe_load((ROOT / "roles" / decl.spec["role"] / "meta" / "argument_specs.yml").read_text())
        options = {o for e in specs["argument_specs"].values() for o in (e.get("options") or {})}
        assert decl.spec["option"] in options


def test_declarations_are_well_formed():
    for decl in CONTRACT.by_name.values():
        assert decl.name.startswith("k3_"), decl.name
        if decl.section != "internal":
            assert decl.scope in ("deployment", "group", "host"), decl
            assert decl.description, decl.name


def test_variable_reference_tables_are_generated_from_the_contract():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_variables_doc.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, (
        "docs/variables.md's variable tables are stale: run tools/gen_variables_doc.py\n" + proc.stdout
    )
    page = (ROOT / "docs" / "variables.md").read_text()
    for decl in CONTRACT.by_name.values():
        if decl.section != "internal":
            assert "`%s`" % decl.name in page, decl.name
    # The README, what Galaxy shows, points to the reference.
    assert "(docs/variables.md)" in (ROOT / "README.md").read_text()


def decl(kind, **spec):
    return Declaration("k3_x", dict(spec, type=kind), "parameters", "test")


@pytest.mark.parametrize(
    "declaration,value,expected",
    [
        (decl("int", min=1), "8", 8),
        (decl("int", min=0), 0, 0),
        (decl("port"), "8000", 8000),
        (decl("port"), 65535, 65535),
        (decl("number", min=0.01, max=1), "0.90", "0.90"),
        (decl("bool"), "yes", True),
        (decl("bool"), False, False),
        (decl("str", choices=["nvlink", "rdma"]), "rdma", "rdma"),
        (decl("path", absolute=True), "/models", "/models"),
        (decl("size"), "64M", "64M"),
        (decl("size"), "1GB", "1GB"),
        (decl("size"), 1024, 1024),
        (decl("ip"), "10.0.0.1", "10.0.0.1"),
        (decl("ip"), "fd00::1", "fd00::1"),
        (decl("interface"), "enp1s0f0", "enp1s0f0"),
        (decl("str_list", comma=True), "mlx5_0,mlx5_1", "mlx5_0,mlx5_1"),
        (decl("str_list"), ["a", "b"], ["a", "b"]),
        (decl("int_list"), [1, "8"], [1, 8]),
        (decl("mapping", keys=["ubuntu", "openeuler"]), {"ubuntu": "a", "openeuler": "b"}, None),
        (decl("env"), {"A": "1", "B": None}, None),
        (decl("args"), ["--x", {"--y": 1}], None),
        (decl("int", nullable=True), None, None),
    ],
)
def test_values_accepted(declaration, value, expected):
    out = check_value(declaration, value)
    assert out == (value if expected is None else expected)


@pytest.mark.parametrize(
    "declaration,value,needle",
    [
        (decl("int", min=1), 0, "out of range"),
        (decl("int", min=1), True, "not a whole number"),
        (decl("int", min=1), "8.5", "not a whole number"),
        (decl("int", min=1), None, "null"),
        (decl("port"), 0, "out of range"),
        (decl("port"), 70000, "out of range"),
        (decl("port"), [8000], "not a whole number"),
        (decl("number", min=0.01, max=1), "1.5", "out of range"),
        (decl("number", min=0.01, max=1), "nan", "out of range"),
        (decl("number"), True, "not a number"),
        (decl("bool"), "maybe", "not true or false"),
        (decl("bool"), 2, "not true or false"),
        (decl("str", choices=["nvlink", "rdma"]), "ib", "choices"),
        (decl("str"), "", "empty"),
        (decl("str"), {"a": 1}, "not a text"),
        (decl("str", pattern=r"^\S+$"), "a b", "not well formed"),
        (decl("path", absolute=True), "models", "not an absolute path"),
        (decl("size"), "lots", "not a size"),
        (decl("size"), 0, "not a size"),
        (decl("ip"), "node-a", "not an IP address"),
        (decl("ip"), "10.0.0.300", "not an IP address"),
        (decl("ip"), 10, "not an IP address"),
        (decl("interface"), "eth0 eth1", "not an interface name"),
        (decl("interface"), "a-very-long-interface-name", "not an interface name"),
        (decl("str_list"), [], "empty list"),
        (decl("str_list"), "a,b", "not a list"),
        (decl("str_list", comma=True), "a,,b", "empty item"),
        (decl("str_list"), [None], "not a name"),
        (decl("int_list"), [], "empty list"),
        (decl("int_list"), [0], "below 1"),
        (decl("int_list"), "1,8", "not a list"),
        (decl("mapping", keys=["ubuntu", "openeuler"]), {"ubuntu": "a"}, "no openeuler"),
        (decl("mapping", keys=["ubuntu"]), {"ubuntu": "a", "centos": "b"}, "unknown keys centos"),
        (decl("mapping"), ["a"], "not a mapping"),
        (decl("env"), ["A=1"], "not a mapping"),
        (decl("env"), {"A-B": "1"}, "not an environment variable name"),
        (decl("env"), {"A": [1]}, "not a text"),
        (decl("args"), "--x", "not a list"),
        (decl("args"), [{"--a": 1, "--b": 2}], "neither"),
        (decl("args"), ["x"], "not a flag"),
    ],
)
def test_values_refused(declaration, value, needle):
    with pytest.raises(Invalid) as err:
        check_value(declaration, value)
    assert needle in err.value.message, err.value.message
    assert err.value.expected
