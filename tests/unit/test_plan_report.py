# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""report.html and its picture (plugins/plugin_utils/report/), for every profile.

The picture is checked as data (``topology``), as Graphviz source and, with ``dot`` installed (make
test installs graphviz), as the SVG dot draws: every host and service named, the KV-cache edge
exactly where there are prefill and decode pools, followers inside their node 0's group, and every
text escaped (host names the planner accepts, such as ``<script>...``, included).
"""

from __future__ import annotations

import copy
import functools
import html
import os
import re
import shutil
import xml.etree.ElementTree as ET

import pytest
from conftest import EXAMPLES, ROOT, example_names, example_plan, inventory_input, sandbox_inventory_input, skip_or_fail

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import ROLE_GROUPS, build_plan
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._dot import topology_dot
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._file import PICTURE_MAX_HOSTS, report_file
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._html import report_html
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._model import port_text, rank_text, start_order
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._render import inline_svg
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._topology import kv_label, topology, wrap

SVG = "{http://www.w3.org/2000/svg}"
PROFILES = sorted(p.stem for p in (ROOT / "profiles").glob("*.yml") if not p.name.startswith("_"))


def deployment_groups(inventory):
    return {g: list(inventory["groups"].get(g, [])) for g in ROLE_GROUPS}


@functools.cache
def sandbox_bench_inventory():
    """The sandbox inventory with -e k3_profile=sandbox-bench on three engine hosts (tools/bench_deploy.sh)."""
    inv = copy.deepcopy(sandbox_inventory_input("sandbox"))
    hosts = ["k3-sb-dp0", "k3-sb-dp1", "k3-sb-prefill"]
    inv["groups"] = {"engine": hosts, "all": hosts}
    inv["hostvars"] = {h: {**inv["hostvars"][h], "k3_profile": "sandbox-bench"} for h in hosts}
    return inv


@functools.cache
def case(source):
    """(plan, groups) of an example inventory, or of a sandbox inventory (``sandbox:<name>``)."""
    if source == "sandbox:bench":
        inv = sandbox_bench_inventory()
    elif source.startswith("sandbox:"):
        inv = sandbox_inventory_input(source.split(":", 1)[1])
    else:
        inv = inventory_input(str(EXAMPLES / source / "hosts.yml"))
        return example_plan(source), deployment_groups(inv)
    return build_plan(copy.deepcopy(inv)), deployment_groups(inv)


def plan_and_groups(source):
    plan, groups = case(source)
    return copy.deepcopy(plan), copy.deepcopy(groups)


SOURCES = example_names() + ["sandbox:sandbox", "sandbox:sandbox-ha", "sandbox:bench"]


def services(plan):
    return [(host, svc) for host, data in plan["hosts"].items() for svc in data["services"]]


def is_pd(plan):
    roles = {svc["role"] for _h, svc in services(plan) if svc["kind"] == "vllm"}
    return {"prefill", "decode"} <= roles


def kv_edges(model):
    return [e for e in model["edges"] if e["kind"] == "kv"]


def node(model, key):
    return next(n for n in model["nodes"] if n["key"] == key)


def ancestors(model, cluster_id):
    """The cluster and every cluster around it."""
    by_id = {c["id"]: c for c in model["clusters"]}
    out = []
    while cluster_id:
        out.append(cluster_id)
        cluster_id = by_id[cluster_id]["parent"]
    return out


def dot_or_skip():
    if not shutil.which("dot"):
        skip_or_fail("Graphviz's dot is not installed (make test installs the Debian package graphviz)")


def svg_texts(svg):
    """Every text dot wrote into the SVG, entities resolved (the SVG parses as XML)."""
    root = ET.fromstring(svg)
    return [t.text or "" for t in root.iter(SVG + "text")]


# --------------------------------------------------------------------------
# Every profile
# --------------------------------------------------------------------------
def test_every_profile_has_a_case():
    profiles = {case(source)[0]["profile"] for source in SOURCES}
    assert profiles == set(PROFILES)


@pytest.mark.parametrize("source", SOURCES)
def test_picture_names_every_host_and_service_and_draws_kv_only_for_pd(source):
    plan, groups = plan_and_groups(source)
    model = topology(plan, groups)
    keys = {n["key"] for n in model["nodes"]}
    # The exporters and group guards (beside the serving) are in the services table, not drawn.
    assert keys == {"%s/%s" % (h, s["name"]) for h, s in services(plan) if s["kind"] not in ("exporter", "guard")}
    assert {n["host"] for n in model["nodes"]} == set(plan["hosts"])
    # The KV path: one edge, from the prefill pool to the decode pool, exactly for P/D plans.
    kv = kv_edges(model)
    if is_pd(plan):
        pools = {c["role"]: c["id"] for c in model["clusters"] if c["kind"] == "pool"}
        assert len(kv) == 1 and kv[0]["ltail"] == pools["prefill"] and kv[0]["lhead"] == pools["decode"]
        assert kv[0]["label"].startswith("KV cache: ")
    else:
        assert kv == []
    # The clients enter at the plan's endpoint, the front door, and it leads to what it guards.
    endpoint = plan["endpoint"]
    client = [e for e in model["edges"] if e["kind"] == "client"]
    assert len(client) == 1 and client[0]["label"] == "endpoint %s" % endpoint["url"]
    assert client[0]["head"] == node(model, "%s/%s" % (endpoint["host"], endpoint["service"]))["id"]
    (door,) = edges(model, "door")
    assert door["tail"] == client[0]["head"] and door["label"] == "the allowed routes"
    # Followers sit in their node 0's group, and join it.
    for host, svc in services(plan):
        for root in svc.get("after_started") or []:
            follower, leader = node(model, "%s/%s" % (host, svc["name"])), node(model, root)
            assert follower["cluster"] == leader["cluster"]
            group = next(c for c in model["clusters"] if c["id"] == leader["cluster"])
            assert group["kind"] == "group" and {follower["id"], leader["id"]} <= set(group["members"])
            assert any(
                e["kind"] == "join" and (e["tail"], e["head"]) == (leader["id"], follower["id"]) for e in model["edges"]
            )
    dot = topology_dot(model)
    for host in plan["hosts"]:
        assert html.escape(host) in dot
    assert dot.count('class="edge-kv"') == (1 if is_pd(plan) else 0)


@pytest.mark.parametrize("source", SOURCES)
def test_page_lists_hosts_services_units_ports_and_start_order(source):
    plan, groups = plan_and_groups(source)
    page = report_html(plan, groups, svg=None, problem="test")
    for host, data in plan["hosts"].items():
        row = re.search(
            r"<tr><td><code>%s</code></td><td>%s</td><td>([^<]*)</td>"
            % (re.escape(html.escape(host)), re.escape(data["ip"])),
            page,
        )
        assert row, host
        assert row.group(1) == ", ".join(g for g in ROLE_GROUPS if host in groups[g])
    for host, svc in services(plan):
        assert "<code>%s.service</code>" % svc["unit"] in page
        for port in svc["ports"]:
            assert port_text(port) in page
        assert "<td><code>%s/%s</code></td>" % (html.escape(host), html.escape(svc["name"])) in page
    assert "<code>%s</code>" % plan["profile"] in page


@pytest.mark.parametrize("source", ["nvidia-pd-nixl", "mi355x-pd-1p1d-c48", "a3-mixed-4node", "sandbox:sandbox"])
def test_svg_from_dot_names_every_host_and_has_the_kv_edge_only_for_pd(source):
    dot_or_skip()
    plan, groups = plan_and_groups(source)
    page, warning = report_file(plan, groups)
    assert warning is None
    svg = page[page.index("<svg") : page.index("</svg>") + len("</svg>")]
    texts = " ".join(svg_texts(svg))
    for host, _svc in services(plan):
        assert host in texts
    assert svg.count('class="edge edge&#45;kv"') == (1 if is_pd(plan) else 0)
    assert "<!--" not in svg and "<?xml" not in page and "<!DOCTYPE svg" not in page


# --------------------------------------------------------------------------
# The platforms' shapes
# --------------------------------------------------------------------------
def edges(model, kind):
    return [e for e in model["edges"] if e["kind"] == kind]


def test_nvidia_pd_nixl_router_to_both_pools_nixl_kv_and_the_dep_decode_group():
    plan, groups = plan_and_groups("nvidia-pd-nixl")
    model = topology(plan, groups)
    assert kv_edges(model)[0]["label"] == "KV cache: NixlConnector"
    router, p0, d0, d1 = (
        node(model, k) for k in ("pd-router/router", "gb300-p0/prefill", "gb300-d0/decode", "gb300-d1/decode")
    )
    group = next(c for c in model["clusters"] if c["kind"] == "group")
    assert group["members"] == [d0["id"], d1["id"]] and group["role"] == "decode"
    assert group["label"][0] == "data-parallel group: DP 16 on 2 nodes"
    routes = {(e["head"], e["lhead"], e["label"]) for e in edges(model, "route") if e["tail"] == router["id"]}
    assert routes == {(p0["id"], None, "prefill"), (d0["id"], group["id"], "decode")}
    assert "node 1, DP ranks 8-15 of 16" in d1["lines"]


def test_mi355x_moriio_engines_register_with_the_router_and_kv_names_the_shared_connector():
    plan, groups = plan_and_groups("mi355x-pd-1p2d-c24")
    model = topology(plan, groups)
    # Prefill runs MoRIIO inside a MultiConnector with CPU offload; decode MoRIIO: the path is MoRIIO.
    assert kv_edges(model)[0]["label"] == "KV cache: MoRIIOConnector"
    labels = sorted(e["label"] for e in edges(model, "route"))
    assert labels == ["decode (registers on discovery 36367)"] * 2 + ["prefill (registers on discovery 36367)"]
    assert [c["label"][1] for c in model["clusters"] if c["kind"] == "pool"] == [
        "1 replica group, 1 host",
        "2 replica groups, 2 hosts",
    ]


def test_ascend_a3_mixed_dp_group_of_four_with_headless_followers():
    plan, groups = plan_and_groups("a3-mixed-4node")
    model = topology(plan, groups)
    assert kv_edges(model) == [] and edges(model, "route") == []
    (group,) = [c for c in model["clusters"] if c["kind"] == "group"]
    assert group["label"] == ["data-parallel group: DP 4 on 4 nodes", "node 0 a3-n0, DP RPC 198.51.100.11:13389"]
    assert [model["nodes"][int(m[1:])]["host"] for m in group["members"]] == ["a3-n0", "a3-n1", "a3-n2", "a3-n3"]
    joins = edges(model, "join")
    assert len(joins) == 3 and {e["tail"] for e in joins} == {node(model, "a3-n0/engine")["id"]}
    assert "headless follower, node 2, DP rank 2 of 4" in node(model, "a3-n2/engine")["lines"]
    # The clients reach node 0 through the front door: the edge is drawn to the whole group.
    (door,) = edges(model, "door")
    assert door["lhead"] == group["id"] and door["tail"] == node(model, "a3-n0/front-door")["id"]


def test_ascend_8p8d_proxy_mooncake_and_the_metaservice_the_prefill_group_waits_for():
    plan, groups = plan_and_groups("a3-pd-8p8d")
    model = topology(plan, groups)
    assert kv_edges(model)[0]["label"] == "KV cache: MooncakeConnectorV1"
    prefill_group = node(model, "a3pd-p0/prefill")["cluster"]
    (wait,) = edges(model, "after")
    assert (wait["tail"], wait["head"], wait["lhead"]) == (
        node(model, "a3pd-meta/metaservice")["id"],
        node(model, "a3pd-p0/prefill")["id"],
        prefill_group,
    )
    assert len(edges(model, "join")) == 14


def test_sandbox_picture_front_host_twice_dp_group_apart_from_the_router():
    plan, groups = plan_and_groups("sandbox:sandbox")
    model = topology(plan, groups)
    assert kv_edges(model)[0]["label"] == "KV cache: ExampleConnector"
    assert [n["service"] for n in model["nodes"] if n["host"] == "k3-sb-front"] == [
        "metaservice",
        "router",
        "front-door",
    ]
    group = next(c for c in model["clusters"] if c["kind"] == "group")
    # The firewall opens only the endpoint to the clients: the DP group is not drawn behind it.
    assert group["label"][-1] == "its own API, not behind the endpoint"
    assert not [e for e in model["edges"] if e["head"] == node(model, "k3-sb-dp0/engine")["id"] and e["kind"] != "join"]
    rows = [(step, key) for step, key, _a, _s in start_order(plan)]
    # The exporters and the group guards wait for nothing: each starts in the first step.
    exporters = [(step, key) for step, key in rows if key.endswith(("-exporter", "-guard"))]
    assert {key for step, key in exporters if step == 1} == {key for _step, key in exporters}
    assert {key for _step, key in exporters if key.endswith("/node-exporter")} == {
        "%s/node-exporter" % host for host in plan["hosts"]
    }
    assert [row for row in rows if row not in exporters] == [
        (1, "k3-sb-front/metaservice"),
        (1, "k3-sb-decode/decode"),
        (1, "k3-sb-dp0/engine"),
        (2, "k3-sb-prefill/prefill"),
        (2, "k3-sb-dp1/engine"),
        (3, "k3-sb-front/router"),
        (4, "k3-sb-front/front-door"),
    ]


def test_sandbox_ha_pools_of_two_without_groups():
    plan, groups = plan_and_groups("sandbox:sandbox-ha")
    model = topology(plan, groups)
    assert [c["kind"] for c in model["clusters"]] == ["pool", "pool"]
    assert len(edges(model, "route")) == 4 and len(kv_edges(model)) == 1


# --------------------------------------------------------------------------
# Escaping, self-containment, no keys, and the page without dot
# --------------------------------------------------------------------------
HOSTILE = ["<script>alert(1)</script>", "b&\"x'<img src=y onerror=z>"]


def hostile_plan():
    groups = {"engine": list(HOSTILE)}
    hostvars = {
        h: {"k3_profile": "sandbox-bench", "ansible_host": ip, "k3_nic": "eth0"}
        for h, ip in zip(HOSTILE, ["10.77.0.12", "10.77.0.13"], strict=True)
    }
    return build_plan({"groups": groups, "hostvars": hostvars}), groups


def test_hostile_host_names_are_escaped_in_the_dot_source_and_the_page():
    plan, groups = hostile_plan()  # the planner takes such names: the report must not
    assert sorted(plan["hosts"]) == sorted(HOSTILE)
    dot = topology_dot(topology(plan, groups))
    page = report_html(plan, groups, svg=None, problem="none here", dot_source=dot)
    for text in (dot, page):
        assert "<script" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "b&amp;&quot;x&#x27;&lt;img" in page


def test_hostile_host_names_in_the_svg_are_text_not_markup():
    dot_or_skip()
    plan, groups = hostile_plan()
    page, warning = report_file(plan, groups)
    assert warning is None
    assert "<script" not in page and "<img" not in page
    svg = page[page.index("<svg") : page.index("</svg>") + len("</svg>")]
    texts = svg_texts(svg)
    assert all(any(name in t for t in texts) for name in HOSTILE)


@pytest.mark.parametrize("source", ["a3-pd-8p8d", "sandbox:sandbox"])
def test_page_is_self_contained(source):
    plan, groups = plan_and_groups(source)
    page, _warning = report_file(plan, groups)
    lowered = page.lower()
    for marker in ("<script", "<link", " src=", "url(", "@import", "@font-face", "<iframe", "<object"):
        assert marker not in lowered, marker
    assert lowered.count("<style>") == 1 and lowered.startswith("<!doctype html>")


def test_no_api_key_in_the_page():
    key = "sk-k3-report-0a1b2c3d"
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / "nvidia-pd-nixl" / "hosts.yml")))
    for data in inv["hostvars"].values():
        data["k3_api_key"] = [key, key + "-2"]
        data["k3_admin_api_key"] = key + "-admin"
    plan = build_plan(inv)
    page, _warning = report_file(plan, deployment_groups(inv))
    assert key not in page
    assert "required (2 client keys from k3_api_key; the admin key from k3_admin_api_key)" in page


def test_variant_shown_when_the_plan_has_one():
    plan, groups = plan_and_groups("nvidia-tp8")
    assert "<dt>variant</dt>" not in report_html(plan, groups)
    plan["variant"] = "low-<latency>"
    assert "<dt>variant</dt><dd><code>low-&lt;latency&gt;</code></dd>" in report_html(plan, groups)


def test_without_dot_the_page_has_a_note_and_the_source_and_the_warning_names_the_package(tmp_path):
    plan, groups = plan_and_groups("sandbox:sandbox")
    page, warning = report_file(plan, groups, dot=str(tmp_path / "no-such-dot"))
    assert "<svg" not in page and 'id="no-picture"' in page
    assert "apt-get install graphviz" in page and "<details><summary>Graphviz source" in page
    assert html.escape("digraph kimi_k3 {") in page
    assert warning.startswith("report.html was written without its topology picture: Graphviz's dot is not installed")
    assert "install the package graphviz on the controller (Debian: apt-get install graphviz)" in warning
    for host in plan["hosts"]:
        assert host in page


def test_a_failing_dot_is_a_note_and_a_warning_too(tmp_path):
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\necho 'Error: syntax error in line 1' >&2\nexit 3\n")
    os.chmod(fake, 0o755)
    plan, groups = plan_and_groups("nvidia-tp8")
    page, warning = report_file(plan, groups, dot=str(fake))
    assert "failed (exit 3): Error: syntax error in line 1" in warning
    assert "check the controller's Graphviz" in warning
    assert 'id="no-picture"' in page and "<svg" not in page


# --------------------------------------------------------------------------
# Small parts
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '<?xml version="1.0"?>\n<!DOCTYPE svg>\n<!-- Generated -->\n<svg a="1">\n<!-- s0 -->\n<g/>\n</svg>\n',
            '<svg a="1">\n<g/>\n</svg>\n',
        ),
        ("<svg><!-- a\n--><title>x</title></svg>", "<svg><title>x</title></svg>\n"),
    ],
)
def test_inline_svg(text, expected):
    assert inline_svg(text) == expected


def test_inline_svg_refuses_output_without_svg():
    with pytest.raises(ValueError, match="no <svg> element"):
        inline_svg("Warning: nothing\n")


def kv_service(config):
    return {"argv": ["vllm", "serve", "m", "--kv-transfer-config", config]}


@pytest.mark.parametrize(
    ("prefill", "decode", "expected"),
    [
        ('{"kv_connector":"NixlConnector"}', '{"kv_connector":"NixlConnector"}', "NixlConnector"),
        (
            '{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":'
            '[{"kv_connector":"MooncakeConnectorV1"},{"kv_connector":"AscendStoreConnector"}]}}',
            '{"kv_connector":"MooncakeConnectorV1"}',
            "MooncakeConnectorV1",
        ),
        ('{"kv_connector":"A"}', '{"kv_connector":"B"}', "prefill A, decode B"),
        ("not json", '{"kv_connector":"B"}', "decode B"),
        (None, None, ""),
    ],
)
def test_kv_label(prefill, decode, expected):
    def svcs(config):
        return [kv_service(config)] if config else [{"argv": ["vllm", "serve", "m"]}]

    assert kv_label(svcs(prefill), svcs(decode)) == expected


@pytest.mark.parametrize(
    ("svc", "expected"),
    [
        ({"ranks": {}}, ""),
        ({"ranks": {"node_rank": 0, "nnodes": 2}, "serves_http": True}, "node 0"),
        ({"ranks": {"node_rank": 1, "nnodes": 2}, "serves_http": False}, "headless follower, node 1"),
        (
            {"ranks": {"node_rank": 1, "nnodes": 2, "dp_size": 16, "dp_start_rank": 8}, "serves_http": True},
            "node 1, DP ranks 8-15 of 16",
        ),
        ({"ranks": {"node_rank": 3, "dp_size": 8, "dp_rank": 3}, "serves_http": True}, "node 3, DP rank 3 of 8"),
        (
            {"ranks": {"node_rank": 1, "dp_size": 2, "dp_size_local": 1, "dp_start_rank": 1}, "serves_http": False},
            "headless follower, node 1, DP rank 1 of 2",
        ),
    ],
)
def test_rank_text(svc, expected):
    assert rank_text(svc) == expected


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], []),
        (["http 8000"], ["http 8000"]),
        (
            ["http 6100", "moriio-handshake 26000-26007", "moriio-notify 27000-27007"],
            ["http 6100, moriio-handshake 26000-26007", "moriio-notify 27000-27007"],
        ),
    ],
)
def test_wrap(items, expected):
    assert wrap(items) == expected


def test_above_the_readable_size_the_page_has_its_tables_and_no_picture_without_a_warning(tmp_path):
    inv = copy.deepcopy(sandbox_bench_inventory())
    model = inv["hostvars"]["k3-sb-dp0"]
    hosts = ["k3-e%03d" % i for i in range(PICTURE_MAX_HOSTS + 2)]
    inv["groups"] = {"engine": hosts, "all": hosts}
    inv["hostvars"] = {
        h: {**model, "ansible_host": "10.78.%d.%d" % (i // 200, 1 + i % 200)} for i, h in enumerate(hosts)
    }
    plan = build_plan(inv)
    # A dot that would fail if it were run: it is not.
    page, warning = report_file(plan, deployment_groups(inv), dot=str(tmp_path / "no-such-dot"))
    assert warning is None and "<svg" not in page
    assert (
        "No picture: a picture of %d hosts is not readable (drawn up to %d hosts)" % (len(hosts), PICTURE_MAX_HOSTS)
        in page
    )
    for host in hosts:
        assert host in page
