# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The plan contract (plugins/plugin_utils/data/plan-v1.schema.json, plan_schema.validate_plan)."""

from __future__ import annotations

import copy
import functools
import re

import pytest
from conftest import EXAMPLES, ROOT, example_names, example_plan, inventory_input

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _plan_schema as plan_schema
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner

BACKENDS = ["builtin"] + (["jsonschema"] if plan_schema.jsonschema is not None else [])

# The sandbox profiles have no committed inventory (tools/sandbox.sh writes it): the README's five hosts.
SANDBOX_GROUPS = {
    "sandbox-cpu": {
        "metaservice": ["k3-sb-front"],
        "router": ["k3-sb-front"],
        "engine": ["k3-sb-dp0", "k3-sb-dp1"],
        "prefill": ["k3-sb-prefill"],
        "decode": ["k3-sb-decode"],
    },
    "sandbox-bench": {"engine": ["k3-sb-dp0", "k3-sb-dp1", "k3-sb-prefill"]},
}
SANDBOX_ADDRESSES = {
    "k3-sb-front": "10.77.0.11",
    "k3-sb-dp0": "10.77.0.12",
    "k3-sb-dp1": "10.77.0.13",
    "k3-sb-prefill": "10.77.0.14",
    "k3-sb-decode": "10.77.0.15",
}


@functools.cache
def sandbox_plan(profile):
    groups = SANDBOX_GROUPS[profile]
    hosts = {h for members in groups.values() for h in members}
    hostvars = {h: {"k3_profile": profile, "ansible_host": SANDBOX_ADDRESSES[h], "k3_nic": "eth0"} for h in hosts}
    return planner.build_plan({"groups": groups, "hostvars": hostvars})


@functools.cache
def variant_plan(variant):
    """The A3 mixed example with k3_variant set on every host (as all.vars would)."""
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / "a3-mixed-4node" / "hosts.yml")))
    for data in inv["hostvars"].values():
        data["k3_variant"] = variant
    return planner.build_plan(inv)


PLANS = (
    [("example", name) for name in example_names()]
    + [("sandbox", name) for name in SANDBOX_GROUPS]
    + [("variant", name) for name in ("performance", "toolcall")]
)


def plan_of(source, name):
    if source == "variant":
        return copy.deepcopy(variant_plan(name))
    return copy.deepcopy(example_plan(name) if source == "example" else sandbox_plan(name))


def schema_nodes(node, path="#"):
    """Every (path, mapping) of a schema, depth first."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from schema_nodes(value, "%s/%s" % (path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from schema_nodes(value, "%s/%d" % (path, index))


def property_names(schema):
    """Every name the schema describes under `properties`."""
    names = set()
    for _path, node in schema_nodes(schema):
        if isinstance(node.get("properties"), dict):
            names.update(node["properties"])
    return names


# --------------------------------------------------------------------------
# The schema itself
# --------------------------------------------------------------------------
def test_version_is_the_planners():
    schema = plan_schema.plan_schema()
    assert plan_schema.PLAN_SCHEMA_VERSION == planner.PLAN_VERSION == schema["properties"]["version"]["const"]
    assert plan_schema.PLAN_SCHEMA_FILE == "plan-v%d.schema.json" % planner.PLAN_VERSION
    assert (ROOT / "plugins" / "plugin_utils" / "data" / plan_schema.PLAN_SCHEMA_FILE).is_file()


def test_schema_is_a_valid_json_schema():
    if plan_schema.jsonschema is None:
        pytest.skip("jsonschema is not installed")
    schema = plan_schema.plan_schema()
    plan_schema.jsonschema.validators.validator_for(schema).check_schema(schema)


def test_schema_uses_only_keywords_the_builtin_validator_checks():
    known = plan_schema.BUILTIN_KEYWORDS | plan_schema.ANNOTATIONS
    for path, node in schema_nodes(plan_schema.plan_schema()):
        if path.endswith(("/properties", "/$defs")):
            continue  # names, not keywords
        assert set(node) <= known, "%s uses %s" % (path, sorted(set(node) - known))


def test_every_field_says_what_it_means():
    for path, node in schema_nodes(plan_schema.plan_schema()):
        if path.endswith("/properties"):
            continue  # a property named "properties" would be a schema, not this mapping
        for name, sub in (node.get("properties") or {}).items():
            assert sub.get("description"), "%s/properties/%s has no description" % (path, name)


def test_fixed_shapes_refuse_unknown_keys():
    """Every object schema with listed properties is closed, except the parameters map (profile-defined names)."""
    for path, node in schema_nodes(plan_schema.plan_schema()):
        if path.endswith("/properties") or "properties" not in node:
            continue
        if path == "#/properties/parameters":
            assert isinstance(node["additionalProperties"], dict)
            continue
        assert node.get("additionalProperties") is False, path


# --------------------------------------------------------------------------
# Plans the planner makes
# --------------------------------------------------------------------------
@pytest.mark.parametrize("use", BACKENDS)
@pytest.mark.parametrize(("source", "name"), PLANS)
def test_planned_plans_validate(source, name, use):
    plan = plan_of(source, name)
    assert plan_schema.validate(plan_schema.plan_schema(), plan, use) == []


@pytest.mark.parametrize(("source", "name"), PLANS)
def test_validate_plan(source, name):
    assert plan_schema.validate_plan(plan_of(source, name)) == []


def undocumented(value, schema, root, path="$"):
    """Keys of ``value`` its schema neither lists nor covers with a map schema."""
    while "$ref" in schema:
        schema = plan_schema._resolve(root, schema["$ref"])
    if "anyOf" in schema:
        fitting = [s for s in schema["anyOf"] if plan_schema._fits(value, plan_schema._types(s, root))]
        assert len(fitting) == 1, "%s: %d alternatives fit" % (path, len(fitting))
        return undocumented(value, fitting[0], root, path)
    out = []
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = "%s.%s" % (path, key)
            if key in properties:
                out.extend(undocumented(item, properties[key], root, where))
            elif isinstance(extra, dict):
                out.extend(undocumented(item, extra, root, where))
            else:
                out.append(where)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            out.extend(undocumented(item, schema["items"], root, "%s[%d]" % (path, index)))
    return out


@pytest.mark.parametrize(("source", "name"), PLANS)
def test_no_undocumented_field(source, name):
    schema = plan_schema.plan_schema()
    assert undocumented(plan_of(source, name), schema, schema) == []


def test_optional_fields_appear_in_some_plan():
    """shell, files and verify.kv_transfer are only written where needed: the examples exercise each."""
    seen = set()
    for source, name in PLANS:
        plan = plan_of(source, name)
        seen.update(k for k in ("kv_transfer",) if k in plan["verify"])
        for data in plan["hosts"].values():
            for svc in data["services"]:
                seen.update(k for k in ("shell", "files") if k in svc)
    assert seen == {"shell", "files", "kv_transfer"}


# --------------------------------------------------------------------------
# Plans that are wrong
# --------------------------------------------------------------------------
def first_service(plan):
    host = next(iter(plan["hosts"]))
    return host, plan["hosts"][host]["services"][0]


def _missing_field(plan):
    host, svc = first_service(plan)
    del svc["argv"]
    return "$.hosts[%r].services[0].argv: missing (required)" % host


def _wrong_type(plan):
    host, svc = first_service(plan)
    svc["argv"] = " ".join(svc["argv"])
    return "$.hosts[%r].services[0].argv: " % host


def _unknown_key(plan):
    host, svc = first_service(plan)
    svc["restart_policy"] = "always"
    return "$.hosts[%r].services[0].restart_policy: unknown key" % host


def _version_2(plan):
    plan["version"] = 2
    return "$.version: 2, expected 1"


def _version_true(plan):
    plan["version"] = True  # JSON true is not 1
    return "$.version: true, expected 1"


def _no_version(plan):
    del plan["version"]
    return "$.version: missing (required)"


def _no_variant(plan):
    del plan["variant"]
    return "$.variant: missing (required)"


def _variant_not_a_name(plan):
    plan["variant"] = ["performance"]
    return '$.variant: ["performance"] is array, expected string or null'


def _unknown_top_level(plan):
    plan["generated_by"] = "hand"
    return "$.generated_by: unknown key"


def _wrong_kind(plan):
    host, svc = first_service(plan)
    svc["kind"] = "engine"
    return '$.hosts[%r].services[0].kind: "engine" is not one of' % host


def _env_not_string(plan):
    host, svc = first_service(plan)
    svc["env"]["K3_TEST"] = 1
    return "$.hosts[%r].services[0].env.K3_TEST: 1 is integer, expected string" % host


def _bad_after(plan):
    host, svc = first_service(plan)
    svc["after"] = ["router"]
    return '$.hosts[%r].services[0].after[0]: "router" does not match' % host


def _unknown_container_key(plan):
    host, svc = first_service(plan)
    svc["container"]["cap_drop"] = ["ALL"]
    return "$.hosts[%r].services[0].container.cap_drop: unknown key" % host


def _port_out_of_range(plan):
    host, svc = first_service(plan)
    svc["ports"] = [{"name": "http", "port": 70000, "count": 1}]
    return "$.hosts[%r].services[0].ports[0].port: 70000 is more than 65535" % host


def _health_without_url(plan):
    host, svc = first_service(plan)
    svc["health"] = {}
    return "$.hosts[%r].services[0].health.url: missing (required)" % host


def _index_unknown_key(plan):
    ref = next(iter(plan["index"]))
    plan["index"][ref]["argv"] = []
    return "$.index[%r].argv: unknown key" % ref


def _index_bad_reference(plan):
    plan["index"]["no-slash"] = next(iter(plan["index"].values()))
    return '$.index: key "no-slash" does not match'


def _endpoint_wrong_type(plan):
    plan["endpoint"] = "http://10.0.0.1:8000"
    return '$.endpoint: "http://10.0.0.1:8000" is not null or object'


def _endpoint_unknown_key(plan):
    plan["endpoint"]["scheme"] = "http"
    return "$.endpoint.scheme: unknown key"


def _verify_unknown_key(plan):
    plan["verify"]["kv_transfer"] = {"counter": "c", "prefill": [], "decode": [], "threshold": 1}
    return "$.verify.kv_transfer.threshold: unknown key"


def _ranks_unknown_key(plan):
    host, svc = first_service(plan)
    svc["ranks"]["local_rank"] = 0
    return "$.hosts[%r].services[0].ranks.local_rank: unknown key" % host


def _host_without_ip(plan):
    host = next(iter(plan["hosts"]))
    del plan["hosts"][host]["ip"]
    return "$.hosts[%r].ip: missing (required)" % host


MUTATIONS = [
    _missing_field,
    _wrong_type,
    _unknown_key,
    _version_2,
    _version_true,
    _no_version,
    _no_variant,
    _variant_not_a_name,
    _unknown_top_level,
    _wrong_kind,
    _env_not_string,
    _bad_after,
    _unknown_container_key,
    _port_out_of_range,
    _health_without_url,
    _index_unknown_key,
    _index_bad_reference,
    _endpoint_wrong_type,
    _endpoint_unknown_key,
    _verify_unknown_key,
    _ranks_unknown_key,
    _host_without_ip,
]


@pytest.mark.parametrize("use", BACKENDS)
@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("name", ["mi355x-pd-1p1d-c48", "a3-pd-8p8d"])
def test_wrong_plan_refused_naming_the_path(name, mutate, use):
    plan = plan_of("example", name)
    want = mutate(plan)
    problems = plan_schema.validate(plan_schema.plan_schema(), plan, use)
    assert len(problems) == 1, problems
    assert problems[0].startswith(want), (want, problems)


@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda f: f.__name__.strip("_"))
def test_both_validators_agree(mutate):
    if plan_schema.jsonschema is None:
        pytest.skip("jsonschema is not installed")
    plan = plan_of("example", "nvidia-pd-nixl")
    mutate(plan)
    schema = plan_schema.plan_schema()
    assert plan_schema.validate(schema, plan, "builtin") == plan_schema.validate(schema, plan, "jsonschema")


def test_every_problem_is_reported():
    plan = plan_of("example", "nvidia-tp8")
    wants = [_version_2(plan), _unknown_top_level(plan), _unknown_key(plan)]
    problems = plan_schema.validate_plan(plan)
    assert len(problems) == 3
    assert all(any(p.startswith(w) for p in problems) for w in wants)


@pytest.mark.parametrize("value", [None, [], "plan.json", 1])
def test_not_a_mapping(value):
    (problem,) = plan_schema.validate_plan(value)
    assert problem.startswith("$: ") and "expected object" in problem


def test_without_jsonschema_the_builtin_validator_checks(monkeypatch):
    monkeypatch.setattr(plan_schema, "jsonschema", None)
    assert plan_schema.backend() == "builtin"
    plan = plan_of("example", "a2-mixed-8node")
    assert plan_schema.validate_plan(plan) == []
    want = _unknown_key(plan)
    (problem,) = plan_schema.validate_plan(plan)
    assert problem.startswith(want)
    assert plan_schema.validate(plan_schema.plan_schema(), plan, "jsonschema") == [
        "$: cannot validate: the jsonschema library is not installed"
    ]


# --------------------------------------------------------------------------
# What the roles and plugins read is in the schema
# --------------------------------------------------------------------------
# Names the patterns below catch that are not plan fields: Ansible results, loop variables,
# and fields of other documents (model manifests, socket tables, preflight connections).
NOT_PLAN_FIELDS = {"changed", "changed_services", "id", "service_unit_svc", "entries", "inode", "src", "dst"}
# Plan readers in Python: variables that hold a plan, a service, its container or shell, the parameters.
PY_READ = re.compile(
    r"\b(?:plan|parameters|s|svc|service|eng|other|target|c|container|shell|checks|pin|endpoint)\s*(?:\.get\(|\[)\"(\w+)\""
)
# The planner and the profile loader write the plan and read profiles: not readers.
PY_WRITERS = re.compile(r"^(?:planner|plan_(?!access)\w+|profiles|variables)\.py$")


def _expression_fields(text):
    """Plan field names in a role's or playbook's expressions over a plan, a service or the checks."""
    names = []
    # <role>_plan.hosts[inventory_hostname].services, verify_plan.endpoint.url, ...
    for match in re.finditer(r"\b\w+_plan((?:\.\w+|\[[^\]\[]+\])+)", text):
        parts = re.findall(r"\.(\w+)", match.group(1))
        if text[match.end() : match.end() + 1] == "(":
            parts = parts[:-1]  # a method (index.values()), not a field
        names += parts
    # k3_plan_result['plan']['platform']
    for match in re.finditer(r"\['plan'\]((?:\['\w+'\])+)", text):
        names += re.findall(r"'(\w+)'", match.group(1))
    # a service (service_unit_svc.unit), the verify checks (verify_checks.kv_transfer.decode), a pin
    for match in re.finditer(r"\b(?:\w+_svc|svc|verify_checks|verify_pin\.\d)\.(\w+(?:\.\w+)*)", text):
        names += match.group(1).split(".")
    # plan | kimi_k3.serving.host_services(inventory_hostname, kind='vllm', followers=true)
    for match in re.finditer(r"host_services\(([^)]*)\)", text):
        names += [{"followers": "after_started"}.get(k, k) for k in re.findall(r"(\w+)=", match.group(1))]
    return names


def _attribute_fields(text):
    """selectattr('after_started'), map(attribute='container.devices') on lists of services."""
    names = []
    for line in text.splitlines():
        # (not lines over hostvars: those read what tasks registered on each host)
        if not re.search(r"services|_svc\b|_plan\b|_selected\b|(?<!hosts)_all\b|verify_checks", line):
            continue
        if "hostvars" in line:
            continue
        for match in re.finditer(r"(?:selectattr|rejectattr|subelements)\('([\w.]+)'|map\(attribute='([\w.]+)'", line):
            names += (match.group(1) or match.group(2)).split(".")
    return names


def referenced_fields():
    """Plan field names the roles, playbooks and plugins use, with where they use them."""
    found = {}
    templates = sorted(
        [*(ROOT / "roles").rglob("*.yml"), *(ROOT / "roles").rglob("*.j2"), *(ROOT / "playbooks").glob("*.yml")]
    )
    for path in templates:
        text = path.read_text(encoding="utf-8")
        for name in _expression_fields(text) + _attribute_fields(text):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    for path in sorted((ROOT / "plugins").rglob("*.py")):
        if PY_WRITERS.match(path.name):
            continue
        for match in PY_READ.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match.group(1), set()).add(str(path.relative_to(ROOT)))
    return found


def test_role_and_plugin_fields_are_in_the_schema():
    found = referenced_fields()
    # The patterns still find what the roles are known to read (a pattern gone stale fails here).
    assert {"after_started", "needs_engines", "runtime", "unit", "index", "health", "kv_transfer", "container"} <= set(
        found
    )
    described = property_names(plan_schema.plan_schema())
    unknown = {name: sorted(where) for name, where in found.items() if name not in described | NOT_PLAN_FIELDS}
    assert unknown == {}, "read but not in data/%s (describe them, or add to NOT_PLAN_FIELDS): %s" % (
        plan_schema.PLAN_SCHEMA_FILE,
        unknown,
    )


def test_json_path():
    assert plan_schema.json_path(()) == "$"
    assert plan_schema.json_path(("hosts", "mi355x-p1", "services", 0, "env", "NCCL_IB_HCA")) == (
        "$.hosts['mi355x-p1'].services[0].env.NCCL_IB_HCA"
    )
    assert plan_schema.json_path(("index", "h/router")) == "$.index['h/router']"
