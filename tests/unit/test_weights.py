"""Checkpoint manifests: what model_manifest computes and how nodes are compared."""

from __future__ import annotations

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
