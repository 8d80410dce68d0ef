"""Checkpoint manifests: what model_manifest computes and how nodes are compared."""

from __future__ import annotations

import hashlib

from ansible_collections.kimi_k3.serving.plugins.module_utils import checkpoint_manifest as model_manifest
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._weights import manifest_differences


def make_checkpoint(root, big=3 * 1024 * 1024):
    root.mkdir(parents=True)
    (root / "config.json").write_text('{"num_attention_heads": 64}')
    (root / "model-00001.safetensors").write_bytes(b"\1" * big)
    (root / ".k3-ready").write_text("stamp")
    return root


def test_same_revision_same_digest_quick_and_full(tmp_path):
    a = make_checkpoint(tmp_path / "a")
    b = make_checkpoint(tmp_path / "b")
    for mode in ("quick", "full"):
        ma = model_manifest.manifest(str(a), mode, 1024 * 1024)
        mb = model_manifest.manifest(str(b), mode, 1024 * 1024)
        assert ma["digest"] == mb["digest"] and ma["files"] == 2  # hidden stamp files are not part of it
        assert ma["bytes"] == 3 * 1024 * 1024 + len('{"num_attention_heads": 64}')


def test_a_changed_byte_in_the_middle_needs_full_mode(tmp_path):
    a = make_checkpoint(tmp_path / "a")
    b = make_checkpoint(tmp_path / "b")
    data = bytearray((b / "model-00001.safetensors").read_bytes())
    data[len(data) // 2] = 0
    (b / "model-00001.safetensors").write_bytes(bytes(data))
    quick = [model_manifest.manifest(str(p), "quick", 1024 * 1024)["digest"] for p in (a, b)]
    full = [model_manifest.manifest(str(p), "full", 1024 * 1024)["digest"] for p in (a, b)]
    assert quick[0] == quick[1]
    assert full[0] != full[1]


def two_revisions(tmp_path):
    """Manifests of two checkpoints at the same path that differ in config.json."""
    a = make_checkpoint(tmp_path / "a")
    b = make_checkpoint(tmp_path / "b")
    (b / "config.json").write_text('{"num_attention_heads": 32}')
    same = model_manifest.manifest(str(a), "quick", 1 << 24)
    other = model_manifest.manifest(str(b), "quick", 1 << 24)
    other["path"] = same["path"]
    return same, other


def test_differences_name_both_sides_and_the_files(tmp_path):
    same, other = two_revisions(tmp_path)
    problems = manifest_differences({"n0": [same], "n1": [same], "n2": [other]})
    assert problems == [
        "%s differs between n0, n1 and n2: config.json. Fix: use identical checkpoint revisions on every node"
        % same["path"]
    ]
    assert manifest_differences({"n0": [same], "n1": [same]}) == []


def test_missing_folder_is_reported_per_host(tmp_path):
    missing = model_manifest.manifest(str(tmp_path / "nope"), "quick", 1)
    present = model_manifest.manifest(str(make_checkpoint(tmp_path / "nope2")), "quick", 1)
    present["path"] = missing["path"]
    problems = manifest_differences({"n0": [present], "n1": [missing]})
    assert len(problems) == 1 and problems[0].startswith("host n1: model_weights_paths: ")
    assert "does not exist" in problems[0]


def test_a_host_that_did_not_describe_again_is_compared_by_what_preflight_described(tmp_path):
    same, other = two_revisions(tmp_path)
    # n1 skipped its own description: preflight's is compared, and it differs.
    problems = manifest_differences({"n0": [same], "n1": []}, {"n0": [same], "n1": [other]})
    assert problems and "differs between n0 and n1" in problems[0]
    # Its own description wins over preflight's.
    assert manifest_differences({"n0": [same], "n1": [same]}, {"n1": [other]}) == []
    # Neither: the folder is missing on n1.
    assert manifest_differences({"n0": [same], "n1": []}, {})[0].startswith("host n1: ")


def published(root, big_sha256=None):
    """The publisher's list of make_checkpoint's files, as a hub gives it (a hidden file among them)."""
    config = (root / "config.json").read_bytes()
    return [
        {"path": ".gitattributes", "size": 1519, "blob_id": "a" * 40},
        {"path": "config.json", "size": len(config), "blob_id": "b" * 40},
        {
            "path": "model-00001.safetensors",
            "size": 3 * 1024 * 1024,
            "sha256": big_sha256 or hashlib.sha256(b"\1" * 3 * 1024 * 1024).hexdigest(),
        },
    ]


def test_every_node_that_holds_the_publishers_files_passes_whatever_its_hidden_files(tmp_path):
    root = make_checkpoint(tmp_path / "a")
    m = model_manifest.manifest(str(root), "quick", 1 << 24)
    assert manifest_differences({"n0": [m], "n1": [m]}, published=[{"path": m["path"], "files": published(root)}]) == []


def test_a_folder_the_nodes_agree_on_is_still_refused_when_it_is_not_the_publishers(tmp_path):
    root = make_checkpoint(tmp_path / "a")
    (root / "notes.txt").write_text("added by hand")
    m = model_manifest.manifest(str(root), "quick", 1 << 24)
    wrong = published(root, big_sha256="0" * 64)
    wrong[1]["size"] += 1
    (problem,) = manifest_differences(
        {"n0": [m], "n1": []}, described={"n1": [m]}, published=[{"path": m["path"], "files": wrong}]
    )[:1]
    assert problem.startswith("host n0: %s is not the publisher's revision: " % root)
    assert "config.json: %d bytes, the publisher's has %d" % (wrong[1]["size"] - 1, wrong[1]["size"]) in problem
    assert "notes.txt: not in the publisher's revision" in problem and "Fix: run site.yml again" in problem
    # The shard's hash is whole in this manifest (it is small), so it is compared: it differs.
    assert "model-00001.safetensors: SHA-256 " in problem
    assert len(manifest_differences({"n0": [m], "n1": [m]}, published=[{"path": m["path"], "files": wrong}])) == 2


def test_a_big_files_partial_checksum_is_compared_only_in_full_mode():
    size = 32 * 1024 * 1024  # above 16 MiB: quick mode hashes only its ends
    listed = [{"path": "/m", "files": [{"path": "w.safetensors", "size": size, "sha256": "f" * 64}]}]
    node = {
        "path": "/m",
        "exists": True,
        "digest": "d",
        "entries": {"w.safetensors": {"size": size, "sha256": "e" * 64}},
    }
    assert manifest_differences({"n0": [node]}, published=listed) == []
    (problem,) = manifest_differences({"n0": [node]}, published=listed, mode="full")
    assert "w.safetensors: SHA-256 %s, the publisher's is %s" % ("e" * 64, "f" * 64) in problem
