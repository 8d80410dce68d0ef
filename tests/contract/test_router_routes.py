# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Contract: the vllm-router routes the sandbox probes without a key are the pinned router's own.

vllm-router is a Rust binary with no route table to import; its HTTP paths are text in it. Every
route of ``secured_sandbox.ROUTER_ROUTES`` (probed on the sandbox: 401 without a key) must be in
the pinned binary, and every path of the router's route table that the binary spells out in one
piece (``/v1/responses/{response_id}/cancel`` ... ``/workers/{url}``) must be in the list: a pin
that adds a route there fails here.
"""

from __future__ import annotations

import re

from conftest import ROOT, skip_or_fail
from helpers.secured_sandbox import ROUTER_ROUTES

LIBRARY = ROOT / ".venv" / "services" / "lib" / "python3.12" / "site-packages" / "vllm_router_rs.abi3.so"


def binary_text():
    if not LIBRARY.exists():
        skip_or_fail(".venv/services is missing: run `make venv-services` for the vllm-router route contract")
    return LIBRARY.read_bytes()


def test_every_probed_route_is_in_the_pinned_router():
    text = binary_text()
    missing = [path for _method, path in ROUTER_ROUTES if path.encode() not in text]
    assert missing == []


def test_the_routers_route_table_is_probed_whole():
    text = binary_text()
    # The table's paths sit back to back between /v1/responses/{response_id} and /workers/{url}.
    table = re.search(rb"/v1/responses/\{response_id\}/v1/responses.*?/workers/\{url\}", text)
    assert table, "the pinned router's route table moved: read its paths again"
    table = table.group(0).decode()
    known = sorted({path for _method, path in ROUTER_ROUTES}, key=len, reverse=True)
    # Read it as a run of known paths, the longest first at each point: what no known path
    # starts is a route the list (and the sandbox's probe) does not have.
    at, read = 0, []
    while at < len(table):
        path = next((p for p in known if table.startswith(p, at)), None)
        assert path is not None, "a route of the pinned router is not probed: %s" % table[at : at + 60]
        read.append(path)
        at += len(path)
    assert len(read) >= 10 and "/workers/{url}" in read and "/add_worker" in read
