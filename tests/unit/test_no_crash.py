"""No inventory crashes the planner: every example, mutated many times, plans or gives problem lines.

Property-based (hypothesis, derandomized so CI runs the same cases every time): each case takes
an example inventory and applies a few mutations of the kinds an operator's inventory really
has: a variable set to a value of the wrong shape (None, text, a number, a list, a mapping,
nested), removed, renamed with a typo, or copied to another host; a group removed, emptied, set
to a text or a mapping, or a host moved between groups; a host's variables replaced by garbage;
the whole inventory replaced by an empty file. The planner is called without its safety net
(``_Planner(...).build()``), so any exception but PlanError fails the test.
"""

from __future__ import annotations

import copy

import pytest
from conftest import EXAMPLES, example_names, inventory_input
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import PlanError, _Planner
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import load_contract
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._dot import topology_dot
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._html import report_html
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._topology import topology

DECLARED = sorted(load_contract().by_name)
GROUPS = list(planner.ROLE_GROUPS)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.sampled_from([0, -1, 1, 65536, 70000, 2**31]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", " ", "node-a", "10.0.0.300", "0.0.0.0", "127.0.0.1", "{{ nope }}", "{%", "a,b,", "64X"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(st.text(max_size=8), st.sampled_from(["--max-model-len", "--x", "ubuntu"])), inner, max_size=3
        ),
    ),
    max_leaves=8,
)
args_like = st.lists(
    st.one_of(
        st.sampled_from(["--max-model-len", "--max-model", "--enforce-eager", "--no-enforce-eager", "-x", "x"]),
        st.dictionaries(st.sampled_from(["--max-model-len", "--port", "--bogus", "port"]), values, max_size=2),
        values,
    ),
    max_size=4,
)


def mutation():
    return st.one_of(
        st.tuples(st.just("set"), st.integers(0, 50), st.sampled_from(DECLARED), values),
        st.tuples(
            st.just("set"),
            st.integers(0, 50),
            st.sampled_from(["k3_vllm_args", "k3_router_args", "k3_proxy_args"]),
            args_like,
        ),
        st.tuples(st.just("set"), st.integers(0, 50), st.sampled_from(["ansible_host", "ansible_memtotal_mb"]), values),
        st.tuples(st.just("delete"), st.integers(0, 50), st.integers(0, 50)),
        st.tuples(st.just("typo"), st.integers(0, 50), st.integers(0, 50)),
        st.tuples(st.just("group"), st.sampled_from(GROUPS), st.one_of(st.just("drop"), st.just([]), values)),
        st.tuples(st.just("move"), st.integers(0, 50), st.sampled_from(GROUPS)),
        st.tuples(st.just("hostvars"), st.integers(0, 50), values),
        st.tuples(st.just("inventory"), st.sampled_from([None, {}, [], "", {"groups": None}, {"hostvars": []}])),
    )


def apply(inv, change):
    hosts = sorted(inv["hostvars"]) if isinstance(inv, dict) and isinstance(inv.get("hostvars"), dict) else []
    kind = change[0]
    if kind == "inventory":
        return copy.deepcopy(change[1])
    if not isinstance(inv, dict) or not hosts:
        return inv
    pick = hosts[change[1] % len(hosts)] if len(change) > 1 and isinstance(change[1], int) else None
    data = inv["hostvars"].get(pick)
    if kind == "set" and isinstance(data, dict):
        data[change[2]] = copy.deepcopy(change[3])
    elif kind in ("delete", "typo") and isinstance(data, dict) and data:
        key = sorted(data)[change[2] % len(data)]
        value = data.pop(key)
        if kind == "typo":
            data[key[:-1] if len(key) > 4 else key + "x"] = value
    elif kind == "group" and isinstance(inv.get("groups"), dict):
        if change[2] == "drop":
            inv["groups"].pop(change[1], None)
        else:
            inv["groups"][change[1]] = copy.deepcopy(change[2])
    elif kind == "move" and isinstance(inv.get("groups"), dict):
        for members in inv["groups"].values():
            if isinstance(members, list) and pick in members:
                members.remove(pick)
        target = inv["groups"].setdefault(change[2], [])
        if isinstance(target, list):
            target.append(pick)
    elif kind == "hostvars":
        inv["hostvars"][pick] = copy.deepcopy(change[2])
    return inv


def plans_or_refuses(inv):
    try:
        plan = _Planner(inv).build()
    except PlanError as exc:
        assert exc.problems, "a refusal without a problem line"
        for p in exc.problems:
            assert p.host and p.variable and p.message and p.fix, "an incomplete problem line: %s" % p
        return "refused"
    assert isinstance(plan, dict) and plan["hosts"]
    planner.plan_files(plan)  # the readable artefacts render too
    # report.html too (its picture's source and page; dot itself is tested in test_plan_report.py)
    report_html(plan, inv.get("groups"), dot_source=topology_dot(topology(plan)))
    return "planned"


@pytest.mark.parametrize("name", example_names())
@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(changes=st.lists(mutation(), min_size=1, max_size=3))
def test_mutated_examples_plan_or_refuse(name, changes):
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / name / "hosts.yml")))
    for change in changes:
        inv = apply(inv, change)
    plans_or_refuses(inv)


@pytest.mark.parametrize(
    "inventory",
    [
        None,
        {},
        [],
        "",
        0,
        {"groups": None, "hostvars": None},
        {"groups": [], "hostvars": "x"},
        {"groups": {"engine": "h1"}, "hostvars": {"h1": None}},
        {"groups": {"engine": {"h1": {}}}, "hostvars": {}},
        {"groups": {"engine": ["h1"]}, "hostvars": {"h1": {"k3_profile": ["nvidia-tp8"]}}},
        {"groups": {"engine": ["h1"]}, "hostvars": {"h1": {"k3_profile": {"name": "nvidia-tp8"}}}},
    ],
)
def test_inventory_shapes_are_refused_cleanly(inventory):
    assert plans_or_refuses(inventory) == "refused"
