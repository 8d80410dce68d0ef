# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The profile contract (plugins/plugin_utils/data/profile.schema.json): unknown or unread keys are refused."""

from __future__ import annotations

import re
import textwrap

import pytest
import yaml
from conftest import ROOT

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _formulas as formulas
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _plan_schema as plan_schema
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _profiles as profiles

BACKENDS = ["builtin"] + (["jsonschema"] if plan_schema.jsonschema is not None else [])
PROFILE_DIR = ROOT / "profiles"
FILES = sorted(p.name for p in PROFILE_DIR.glob("*.yml"))
PLUGIN_UTILS = ROOT / "plugins" / "plugin_utils"
PLAN = PLUGIN_UTILS / "plan"


def schema():
    return plan_schema.profile_schema()


def service_schema():
    return schema()["$defs"]["service"]


# --------------------------------------------------------------------------
# The shipped profiles
# --------------------------------------------------------------------------
def test_profiles_and_fragments_are_there():
    assert any(f.startswith("_") for f in FILES) and any(not f.startswith("_") for f in FILES)


@pytest.mark.parametrize("use", BACKENDS)
@pytest.mark.parametrize("filename", FILES)
def test_shipped_file_validates(filename, use):
    data = yaml.safe_load((PROFILE_DIR / filename).read_text(encoding="utf-8")) or {}
    assert plan_schema.validate(schema(), data, use) == []


@pytest.mark.parametrize("filename", FILES)
def test_shipped_file_loads(filename):
    merged = profiles.load_profile(filename[: -len(".yml")])
    assert merged["name"]


def test_schema_is_a_valid_json_schema():
    if plan_schema.jsonschema is None:
        pytest.skip("jsonschema is not installed")
    plan_schema.jsonschema.validators.validator_for(schema()).check_schema(schema())


def test_schema_uses_only_keywords_the_builtin_validator_checks():
    known = plan_schema.BUILTIN_KEYWORDS | plan_schema.ANNOTATIONS

    def walk(node, path):
        if isinstance(node, dict):
            if not path.endswith(("/properties", "/$defs")):
                assert set(node) <= known, "%s uses %s" % (path, sorted(set(node) - known))
            for key, value in node.items():
                walk(value, "%s/%s" % (path, key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, "%s/%d" % (path, index))

    walk(schema(), "#")


# --------------------------------------------------------------------------
# The enums follow the code
# --------------------------------------------------------------------------
def test_kinds_are_the_plans():
    planned = plan_schema.plan_schema()["$defs"]["service"]["properties"]["kind"]["enum"]
    # The front door, the exporters and the group guards are the planner's own: no profile declares them.
    assert schema()["$defs"]["kind"]["enum"] + ["front_door", "exporter", "guard"] == planned


def test_groups_are_the_planners():
    assert service_schema()["properties"]["group"]["enum"] == list(planner.ROLE_GROUPS)


def test_dcp_platforms_are_the_formulas():
    assert sorted(schema()["properties"]["dcp_platform"]["enum"]) == sorted(formulas.DCP_BACKENDS)


def test_parallelism_is_what_the_layout_knows():
    layout = (PLAN / "_plan_layout.py").read_text(encoding="utf-8")
    for mode in service_schema()["properties"]["parallelism"]["enum"]:
        assert 'parallel == "%s"' % mode in layout, mode


# --------------------------------------------------------------------------
# Every key the schema allows is read by something
# --------------------------------------------------------------------------
def planner_source():
    names = ["_planner.py", *(p.name for p in PLAN.glob("_plan_*.py") if p.name != "_plan_schema.py")]
    return "\n".join((PLAN / n).read_text(encoding="utf-8") for n in sorted(names))


def reads(source, variable, key):
    return re.search(r'\b%s(?:\.get\(|\[)"%s"' % (variable, re.escape(key)), source) is not None


def test_top_level_keys_are_read():
    source = planner_source()
    for key in schema()["properties"]:
        if key == "extends":
            assert 'data.pop("extends"' in (PLAN / "_profiles.py").read_text(encoding="utf-8")
            continue
        assert reads(source, "profile", key), "profile key %s: nothing in the planner reads it" % key


def test_service_keys_are_read():
    source = planner_source()
    for key in service_schema()["properties"]:
        assert reads(source, "spec", key), "service key %s: nothing in the planner reads it" % key
    for key in service_schema()["properties"]["hosts"]["properties"]:
        assert reads(source, "need", key), "hosts.%s" % key
    for key in service_schema()["properties"]["ports"]["items"]["properties"]:
        assert reads(source, "port", key), "ports[].%s" % key
    for key in schema()["properties"]["verify"]["properties"]:
        assert reads(source, "spec", key), "verify.%s" % key


def test_container_and_shell_keys_are_read_by_the_unit():
    units = (PLUGIN_UTILS / "operations" / "_units.py").read_text(encoding="utf-8")
    container = service_schema()["properties"]["container"]["properties"]
    for key, sub in container.items():
        if sub.get("deprecated"):
            # Carried into the plan's container, read by nothing that runs the service.
            assert not reads(units, "c", key), "container.%s is read now: drop its deprecated mark" % key
        else:
            assert reads(units, "c", key), "container.%s: units.docker_options does not read it" % key
    for key in service_schema()["properties"]["shell"]["properties"]:
        assert reads(units, "shell", key), "shell.%s" % key


def test_files_keys_are_read_by_service_files():
    source = (ROOT / "plugins" / "plugin_utils" / "operations" / "_unit_files.py").read_text(encoding="utf-8")
    for key in service_schema()["properties"]["files"]["items"]["properties"]:
        assert 'item["%s"]' % key in source or 'item.get("%s")' % key in source, "files[].%s" % key


# --------------------------------------------------------------------------
# Refusals, through load_profile
# --------------------------------------------------------------------------
FRAGMENT = """\
platform: rocm
service_defaults:
  vllm:
    command: [vllm, serve, "{{ model_path }}"]
    container:
      network: host
"""
PROFILE = """\
title: A test profile
extends: [_frag]
parameters:
  model_path: /models/m
  http_port: 8000
services:
  engine:
    kind: vllm
    hosts: {min: 1}
    ports:
      - {name: http, port: "{{ http_port }}"}
"""


def write(tmp_path, name, text):
    (tmp_path / ("%s.yml" % name)).write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def profile_dir(tmp_path):
    write(tmp_path, "_frag", FRAGMENT)
    write(tmp_path, "p", PROFILE)
    return tmp_path


def refusal(profile_dir, name="p"):
    with pytest.raises(profiles.ProfileError) as info:
        profiles.load_profile(name, str(profile_dir))
    return str(info.value)


def test_the_test_profile_loads(profile_dir):
    merged = profiles.load_profile("p", str(profile_dir))
    assert merged["services"]["engine"]["ports"] == [{"name": "http", "port": "{{ http_port }}"}]
    assert merged["service_defaults"]["vllm"]["container"] == {"network": "host"}


def test_a_fragment_may_be_partial(tmp_path):
    write(tmp_path, "_part", "parameters: {devices_per_node: 8}\n")
    write(tmp_path, "q", "extends: _part\nservices:\n  engine:\n    args: [--trust-remote-code]\n")
    assert profiles.load_profile("q", str(tmp_path))["parameters"] == {"devices_per_node": 8}
    write(tmp_path, "empty", "")
    assert profiles.load_profile("empty", str(tmp_path))["name"] == "empty"


def test_unknown_top_level_key(profile_dir):
    write(profile_dir, "p", PROFILE + "topology: pd\n")
    text = refusal(profile_dir)
    assert str(profile_dir / "p.yml") in text
    assert "$.topology: unknown key" in text


def test_unknown_service_key(profile_dir):
    write(profile_dir, "p", PROFILE + "    restart: always\n")
    text = refusal(profile_dir)
    assert "%s: $.services.engine.restart: unknown key" % (profile_dir / "p.yml") in text


def test_unknown_container_key(profile_dir):
    write(profile_dir, "p", PROFILE + "    container:\n      cap_add: [SYS_ADMIN]\n")
    text = refusal(profile_dir)
    assert "%s: $.services.engine.container.cap_add: unknown key" % (profile_dir / "p.yml") in text


def test_unknown_key_in_a_fragment_names_the_fragment(profile_dir):
    write(profile_dir, "_frag", FRAGMENT + "      remove_orphans: true\n")
    text = refusal(profile_dir)
    assert "%s: $.service_defaults.vllm.container.remove_orphans: unknown key" % (profile_dir / "_frag.yml") in text


def test_unknown_kind_of_defaults(profile_dir):
    write(profile_dir, "_frag", FRAGMENT + "  engine:\n    image: x\n")
    assert '$.service_defaults: key "engine" is not one of' in refusal(profile_dir)


def test_unknown_shell_hosts_verify_and_port_keys(profile_dir):
    extra = (
        "    shell: {export: [A]}\n"
        "    files: [{path: /etc/x, content: x, owner: root}]\n"
        "verify: {vision: false, kv_transfer: {counter: c, prefill: []}}\n"
    )
    text = PROFILE.replace("hosts: {min: 1}", "hosts: {min: 1, exactly: 2}")
    write(profile_dir, "p", text.replace('port: "{{ http_port }}"}', "port: 1, proto: tcp}") + extra)
    text = refusal(profile_dir)
    for path in (
        "$.services.engine.shell.export",
        "$.services.engine.hosts.exactly",
        "$.services.engine.files[0].owner",
        "$.services.engine.ports[0].proto",
        "$.verify.kv_transfer.prefill",
    ):
        assert "%s: unknown key" % path in text, path


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("    kind: engine\n", '$.services.engine.kind: "engine" is not one of'),
        ("    parallelism: tensor\n", '$.services.engine.parallelism: "tensor" is not one of'),
        ("    after: router\n", '$.services.engine.after: "router" is string, expected array'),
        ("    args: [{--a: 1, --b: 2}]\n", "$.services.engine.args[0]: "),
        ("    hosts: {min: one}\n", '$.services.engine.hosts.min: "one" is string, expected integer'),
        ("    health: {url: 8000}\n", "$.services.engine.health.url: 8000 is integer, expected string"),
    ],
)
def test_wrong_values(profile_dir, line, want):
    write(profile_dir, "p", PROFILE + line)
    assert want in refusal(profile_dir)


def test_a_null_service_removes_an_inherited_one(profile_dir):
    write(profile_dir, "r", "extends: [p]\nservices:\n  engine: null\n")
    assert profiles.load_profile("r", str(profile_dir))["services"]["engine"] is None


VARIANTS = """\
variants:
  fast:
    title: A faster service
    parameters:
      http_port: 8100
"""


def test_variants_load_and_are_not_inherited(profile_dir):
    write(profile_dir, "p", PROFILE + VARIANTS)
    write(profile_dir, "r", "extends: [p]\ntitle: Extends p\n")
    assert profiles.load_profile("p", str(profile_dir))["variants"] == {
        "fast": {"title": "A faster service", "parameters": {"http_port": 8100}}
    }
    assert profiles.variant_names(profiles.load_profile("p", str(profile_dir))) == ["fast"]
    assert "variants" not in profiles.load_profile("r", str(profile_dir))


def test_a_variant_changes_parameter_defaults_only(profile_dir):
    write(profile_dir, "p", PROFILE + VARIANTS)
    merged = profiles.load_profile("p", str(profile_dir))
    assert profiles.with_variant(merged, None) is merged
    fast = profiles.with_variant(merged, "fast")
    assert fast["parameters"] == {"model_path": "/models/m", "http_port": 8100}
    assert merged["parameters"]["http_port"] == 8000  # the loaded profile is not changed
    assert {k: v for k, v in fast.items() if k != "parameters"} == {
        k: v for k, v in merged.items() if k != "parameters"
    }


def test_a_variant_of_a_parameter_the_profile_lacks_is_refused(profile_dir):
    write(profile_dir, "p", PROFILE + VARIANTS.replace("http_port: 8100", "htp_port: 8100"))
    assert refusal(profile_dir) == (
        "%s: variant fast sets parameter htp_port, which profile p does not have (its parameters: http_port, "
        "model_path)" % (profile_dir / "p.yml")
    )


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (VARIANTS.replace("    title: A faster service\n", ""), "$.variants.fast.title: missing (required)"),
        (VARIANTS + "    args: [--enforce-eager]\n", "$.variants.fast.args: unknown key"),
        (VARIANTS.replace("  fast:", "  Fast_1:"), '$.variants: key "Fast_1" does not match'),
        ("variants: [fast]\n", "$.variants: "),
    ],
)
def test_a_malformed_variant_is_refused(profile_dir, text, want):
    write(profile_dir, "p", PROFILE + text)
    assert want in refusal(profile_dir)


def test_the_planner_reports_the_profile_file(profile_dir):
    write(profile_dir, "p", PROFILE + "topology: aggregated\n")
    inventory = {"groups": {"engine": ["e0"]}, "hostvars": {"e0": {"k3_profile": "p", "ansible_host": "10.1.0.1"}}}
    with pytest.raises(planner.PlanError) as info:
        planner.build_plan(inventory, str(profile_dir))
    assert "%s: $.topology: unknown key" % (profile_dir / "p.yml") in str(info.value)


@pytest.mark.parametrize("use", BACKENDS)
def test_validate_profile_names_the_file(use, monkeypatch):
    monkeypatch.setattr(plan_schema, "_PROFILE_PROBLEMS", {})
    if use == "builtin":
        monkeypatch.setattr(plan_schema, "jsonschema", None)
    problems = plan_schema.validate_profile({"services": {"router": {"container": {"entrypoints": "x"}}}}, "x.yml")
    assert problems == [
        "x.yml: $.services.router.container.entrypoints: unknown key (known here: %s)"
        % ", ".join(sorted(service_schema()["properties"]["container"]["properties"]))
    ]
