"""model_weights staging in site.yml's prerequisites stage, on real test hosts over SSH.

Real: the hosts, rsync (ansible.posix.synchronize on each node), the manifests and their
comparison. The checkpoint is the tiny model every test host sees read-only at the checkout's
path, as shared storage; it is staged to a local folder on each node. The Ascend hosts' vendor
parts are the TEST DOUBLES of tests/prerequisites/build_repo.py (the ascend role runs too).
"""

from __future__ import annotations

import json
import os

import pytest
from doubles import ROOT, TestHosts, recap

HOSTS = TestHosts(
    "hosts-ascend.txt", "inventory-ascend", {"k3-a3-0": "k3-double-ascend-a3", "k3-a3-1": "k3-double-ascend-a3"}
)
NAMES = ("k3-a3-0", "k3-a3-1")
SOURCE = ROOT / ".cache" / "sandbox" / "models" / "tiny-llama"
STAGED = "/var/lib/k3-models/tiny-llama"
STAGE = ("-e", json.dumps({"k3_model_path": STAGED, "k3_model_weights_sources": {STAGED: str(SOURCE)}}))

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the test hosts need root")


@pytest.fixture(scope="module")
def test_hosts():
    yield from HOSTS.session()


def test_a_missing_source_is_refused_before_anything_is_staged(test_hosts):
    bad = json.dumps({"k3_model_path": STAGED, "k3_model_weights_sources": {STAGED: "/srv/no-such-release"}})
    out = test_hosts.site("-e", bad, check=False)
    assert out.returncode != 0
    for host in NAMES:
        assert "%s: /srv/no-such-release (model_weights_sources) missing or not a folder" % host in out.stdout
        assert test_hosts.shell(host, "test -e %s && echo staged || echo absent" % STAGED) == "absent"


def test_staged_on_every_node_identical_and_a_rerun_copies_nothing(test_hosts):
    out = test_hosts.site(*STAGE)
    assert all(recap(out.stdout)[h]["changed"] > 0 for h in NAMES), out.stdout[-3000:]
    files = sorted(p.name for p in SOURCE.iterdir())
    for host in NAMES:
        assert sorted(test_hosts.shell(host, "ls -A %s" % STAGED).split()) == files
    again = test_hosts.site(*STAGE)
    assert [recap(again.stdout)[h]["changed"] for h in NAMES] == [0, 0]


def test_a_node_whose_staged_copy_was_altered_is_brought_back(test_hosts):
    test_hosts.shell("k3-a3-1", "echo corrupted >> %s/config.json" % STAGED)
    out = test_hosts.site(*STAGE)
    assert recap(out.stdout)["k3-a3-1"]["changed"] == 1 and recap(out.stdout)["k3-a3-0"]["changed"] == 0
    assert "corrupted" not in test_hosts.shell("k3-a3-1", "cat %s/config.json" % STAGED)
