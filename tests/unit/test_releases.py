"""Releases kept on a host: the service_units module keeps each service's files per release
(plugins/module_utils/releases.py), the service_releases module reports them and restores an earlier
one; keys are never kept, so a restore never brings back a rotated key."""

from __future__ import annotations

import json
import os
import stat

import pytest
from ansible.module_utils.testing import patch_module_args
from conftest import example_plan

from ansible_collections.kimi_k3.serving.plugins.module_utils import planned_files, releases, unit_starts
from ansible_collections.kimi_k3.serving.plugins.modules import service_releases, service_units
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _releases as controller

KEY = "sk-k3-release-old-1a2b3c"
NEW_KEY = "sk-k3-release-new-4d5e6f"


@pytest.fixture
def systemd(monkeypatch):
    """A systemctl double: records calls; ``started`` is each unit's last start (seconds), settable."""
    calls, started = [], {}
    if os.geteuid() != 0:
        monkeypatch.setattr(os, "fchown", lambda *a: None)
        monkeypatch.setattr(os, "chown", lambda *a: None)
        real = planned_files.file_changes
        monkeypatch.setattr(planned_files, "file_changes", lambda *a, **k: [r for r in real(*a, **k) if r != "owner"])
    monkeypatch.setattr(unit_starts.Systemd, "__init__", lambda self, module: setattr(self, "module", module))
    monkeypatch.setattr(unit_starts.Systemd, "run", lambda self, *args: calls.append(args) or "")
    monkeypatch.setattr(
        unit_starts.Systemd, "started", lambda self, units: {u: started[u] for u in units if u in started}
    )
    return {"calls": calls, "started": started}


def files(tmp_path, port, key=KEY):
    conf = tmp_path / "conf"
    conf.mkdir(exist_ok=True)
    return [
        {"path": str(conf / "engine.yaml"), "content": "port: %d\n" % port, "service": "engine"},
        {
            "path": str(conf / "engine.env"),
            "content": "VLLM_PORT=%d\nVLLM_API_KEY=%s\n" % (port, key),
            "mode": "0600",
            "service": "engine",
            "secret": True,
        },
        {
            "path": str(conf / "keys.yaml"),
            "content": "api-key:\n- %s\n" % key,
            "mode": "0600",
            "service": "engine",
            "secret": True,
        },
        {
            "path": str(conf / "k3-engine.service"),
            "content": "[Service]\nExecStart=vllm --port %d\n" % port,
            "service": "engine",
        },
    ]


def apply(capsys, tmp_path, release, port, key=KEY, check=False, pending=False):
    args = {
        "files": files(tmp_path, port, key),
        "secrets": [key],
        "release": {"id": release, "by": "tester"},
        "releases_dir": str(tmp_path / "releases"),
        "pending": [{"name": "engine", "unit": "k3-engine", "phase": "node0"}] if pending else [],
        "_ansible_check_mode": check,
    }
    with patch_module_args(args), pytest.raises(SystemExit):
        service_units.main()
    return json.loads(capsys.readouterr().out)


def releases_module(capsys, tmp_path, state="report", release=None, check=False):
    args = {
        "services": [{"name": "engine", "unit": "k3-engine"}],
        "state": state,
        "releases_dir": str(tmp_path / "releases"),
        "_ansible_check_mode": check,
    }
    if release:
        args["release"] = release
    with patch_module_args(args), pytest.raises(SystemExit):
        service_releases.main()
    out = capsys.readouterr().out
    return out, json.loads(out)


def text(tmp_path, name):
    return (tmp_path / "conf" / name).read_text()


def test_each_change_is_kept_as_its_release_without_a_key(tmp_path, capsys, systemd):
    first = apply(capsys, tmp_path, "aaa", 8000)
    assert first["kept_releases"] == ["engine"]
    assert not apply(capsys, tmp_path, "aaa", 8000)["changed"]  # a re-run keeps nothing again
    second = apply(capsys, tmp_path, "bbb", 8001)
    assert second["kept_releases"] == ["engine"] and second["changed_services"] == ["engine"]
    folder = tmp_path / "releases" / "engine"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert sorted(p.name for p in folder.iterdir()) == ["aaa", "bbb", "current.json"]
    kept = [p for p in (folder / "aaa").iterdir()]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in kept)
    assert not any(KEY in p.read_text() for p in kept)
    assert json.loads((folder / "current.json").read_text())["release"] == "bbb"
    _, report = releases_module(capsys, tmp_path)
    entry = report["services"][0]
    assert entry["release"] == "bbb" and entry["by"] == "tester" and entry["kept"] == ["aaa", "bbb"]
    assert not report["changed"]


def test_rollback_restores_the_release_before_the_newest_with_todays_keys(tmp_path, capsys, systemd):
    apply(capsys, tmp_path, "aaa", 8000)
    apply(capsys, tmp_path, "bbb", 8001)
    # The key is rotated on release bbb: the environment and key files change, the release stays.
    apply(capsys, tmp_path, "bbb", 8001, key=NEW_KEY)
    raw, dry = releases_module(capsys, tmp_path, "rollback", check=True)
    assert dry["changed_services"] == ["engine"] and text(tmp_path, "engine.yaml") == "port: 8001\n"
    raw, done = releases_module(capsys, tmp_path, "rollback")
    assert done["changed_services"] == ["engine"] and done["reloaded"]
    assert ("daemon-reload",) in systemd["calls"]
    assert text(tmp_path, "engine.yaml") == "port: 8000\n"
    assert text(tmp_path, "k3-engine.service") == "[Service]\nExecStart=vllm --port 8000\n"
    # The configuration of aaa, the key of today; the file of keys is left as it is.
    assert text(tmp_path, "engine.env") == "VLLM_PORT=8000\nVLLM_API_KEY=%s\n" % NEW_KEY
    assert text(tmp_path, "keys.yaml") == "api-key:\n- %s\n" % NEW_KEY
    assert stat.S_IMODE((tmp_path / "conf" / "engine.env").stat().st_mode) == 0o600
    assert KEY not in raw and NEW_KEY not in raw
    assert done["services"][0]["release"] == "aaa" and done["services"][0]["target"] == "aaa"
    # A second rollback changes nothing: the release before the newest is already there.
    _, again = releases_module(capsys, tmp_path, "rollback")
    assert not again["changed"] and again["services"][0]["files"] == []
    # Forward again: the plan of bbb writes bbb's files, kept as the newest.
    assert apply(capsys, tmp_path, "bbb", 8001, key=NEW_KEY)["changed_services"] == ["engine"]
    _, named = releases_module(capsys, tmp_path, "rollback", release="zzz")
    assert named["services"][0]["missing"] and not named["changed"]


def written(tmp_path, seconds=None):
    """When the files of the current release were written (as kept); with ``seconds``, set it first."""
    path = tmp_path / "releases" / "engine" / "current.json"
    if seconds is not None:
        path.write_text(json.dumps(dict(json.loads(path.read_text()), seconds=seconds)))
    return json.loads(path.read_text())["seconds"]


def test_a_unit_started_before_its_files_changed_still_owes_a_restart(tmp_path, capsys, systemd):
    apply(capsys, tmp_path, "aaa", 8000)
    w0 = written(tmp_path)
    systemd["started"]["k3-engine"] = w0 + 5
    assert apply(capsys, tmp_path, "aaa", 8000, pending=True)["pending_services"] == []
    # Staged (written, not restarted): owed now, and still owed in the next run, which writes nothing.
    staged = apply(capsys, tmp_path, "bbb", 8001, pending=True)
    assert staged["pending_services"] == ["engine"]
    written(tmp_path, w0 + 10)  # bbb's files were written after the process started
    again = apply(capsys, tmp_path, "bbb", 8001, pending=True)
    assert not again["changed"] and again["pending_services"] == ["engine"]
    _, report = releases_module(capsys, tmp_path)
    assert report["services"][0]["pending"]
    systemd["started"]["k3-engine"] = w0 + 20
    assert apply(capsys, tmp_path, "bbb", 8001, pending=True)["pending_services"] == []
    # A hand edit after the start is drift (status says so), not a restart owed to a release.
    os.utime(tmp_path / "conf" / "engine.yaml", (w0 + 30, w0 + 30))
    _, report = releases_module(capsys, tmp_path)
    assert not report["services"][0]["pending"]


def test_files_found_before_releases_were_kept_are_adopted_once(tmp_path, capsys, systemd):
    conf = tmp_path / "conf"
    conf.mkdir()
    for item in files(tmp_path, 7000):
        planned_files.write_file(item["path"], item["content"], item.get("mode", "0644"))
    apply(capsys, tmp_path, "aaa", 8000)
    store = releases.Releases(str(tmp_path / "releases"))
    assert [m["release"] for m in store.kept("engine")] == [releases.UNRECORDED, "aaa"]
    releases_module(capsys, tmp_path, "rollback")
    assert text(tmp_path, "engine.yaml") == "port: 7000\n"
    # Unchanged files are kept as the applied release, nothing adopted beside them.
    other = tmp_path / "other"
    other.mkdir()
    for item in files(other, 8000):
        planned_files.write_file(item["path"], item["content"], item.get("mode", "0644"))
    apply(capsys, other, "aaa", 8000)
    assert [m["release"] for m in releases.Releases(str(other / "releases")).kept("engine")] == ["aaa"]


def test_only_the_newest_releases_are_kept_and_never_the_current_one_dropped(tmp_path, capsys, systemd):
    for number, name in enumerate(["r1", "r2", "r3", "r4"]):
        apply(capsys, tmp_path, name, 8000 + number)
    store = releases.Releases(str(tmp_path / "releases"))
    assert [m["release"] for m in store.kept("engine")] == ["r2", "r3", "r4"]
    releases_module(capsys, tmp_path, "rollback", release="r2")
    apply(capsys, tmp_path, "r2", 8001)  # nothing changes: r2's files are there
    assert store.current("engine")["release"] == "r2"


def test_masked_lines_take_the_live_value_and_vanish_without_one():
    kept, masked = releases.mask("A=1\nKEY=%s\nB=2\n" % KEY, [KEY])
    assert kept == "A=1\nKEY=\nB=2\n" and masked == {"1": "KEY"}
    assert releases.unmask(kept, masked, "KEY=%s\n" % NEW_KEY) == "A=1\nKEY=%s\nB=2\n" % NEW_KEY
    assert releases.unmask(kept, masked, "") == "A=1\nB=2\n"
    assert releases.mask("- %s\n" % KEY, [KEY])[1] == {"0": None}


def test_a_release_is_the_plans_content_kept_once_with_its_variables_but_no_key(tmp_path):
    plan = example_plan("nvidia-pd-nixl")
    rid = controller.release_id(plan)
    assert len(rid) == 12 and rid == controller.release_id(json.loads(json.dumps(plan)))
    other = json.loads(json.dumps(plan))
    other["hosts"][sorted(other["hosts"])[0]]["services"][0]["argv"].append("--enforce-eager")
    assert controller.release_id(other) != rid
    variables = controller.redacted({"h1": {"k3_api_key": [KEY, NEW_KEY], "k3_profile": "p"}}, {"k3_api_key"})
    assert variables == {"h1": {"k3_api_key": "(secret: 2 keys)", "k3_profile": "p"}}
    release, new = controller.record(str(tmp_path), plan, variables, "ops@ctl")
    assert new and release["id"] == rid and release["by"] == "ops@ctl"
    folder = tmp_path / rid
    assert sorted(p.name for p in folder.iterdir()) == ["plan.json", "release.json", "variables.json"]
    assert stat.S_IMODE((folder / "variables.json").stat().st_mode) == 0o600
    assert KEY not in (folder / "variables.json").read_text()
    assert json.loads((folder / "plan.json").read_text()) == plan
    again, new = controller.record(str(tmp_path), plan, variables, "someone-else")
    assert not new and again["by"] == "ops@ctl" and again["at"] == release["at"]
    assert [r["id"] for r in controller.history(str(tmp_path))] == [rid]
    dry, new = controller.record(str(tmp_path / "dry"), other, variables, "x", check_mode=True)
    assert new and not (tmp_path / "dry").exists()
    assert controller.applied_by({"awx_user_name": "alice"}) == "alice (AWX)"


def test_a_rollback_says_per_engine_where_it_goes():
    result = {
        "services": [
            {"name": "prefill", "release": "bbb", "target": "aaa", "files": ["/a", "/b"], "kept": ["aaa", "bbb"]},
            {"name": "guard", "release": "aaa", "target": "aaa", "files": [], "kept": ["aaa"]},
            {"name": "x", "release": "bbb", "target": None, "files": [], "missing": True, "kept": ["bbb"]},
            {"name": "y", "release": "bbb", "target": None, "files": [], "kept": ["bbb"]},
        ]
    }
    assert controller.moves([["h1", result], ["h2", {"skipped": True}]]) == [
        "h1/prefill: back to release aaa (2 file(s))",
        "h1/guard: already on release aaa",
        "h1/x: keeps release bbb (it has no such release; kept: bbb)",
        "h1/y: stays on release bbb (no release before it is kept)",
    ]
    assert controller.moves([]) == ["no engine keeps a release on these hosts"]


def test_undoing_files_staged_for_a_process_that_never_restarted_owes_no_restart(tmp_path, capsys, systemd):
    apply(capsys, tmp_path, "aaa", 8000)
    w0 = written(tmp_path)
    systemd["started"]["k3-engine"] = w0 + 1
    # Staged later: the process predates the files of bbb.
    apply(capsys, tmp_path, "bbb", 8001)
    written(tmp_path, w0 + 5)
    _, undone = releases_module(capsys, tmp_path, "rollback")
    entry = undone["services"][0]
    assert entry["pending"] and entry["files"] and not entry["restart"]
    assert undone["changed"] and undone["changed_services"] == []
    assert text(tmp_path, "engine.yaml") == "port: 8000\n"
    _, report = releases_module(capsys, tmp_path)
    assert report["services"][0]["release"] == "aaa" and not report["services"][0]["pending"]


def test_a_start_time_keeps_its_microseconds():
    assert unit_starts.stamp_seconds("Sat 2026-12-05 12:51:25.795570 UTC") == pytest.approx(1796475085.79557)
    assert unit_starts.stamp_seconds("") is None and unit_starts.stamp_seconds("@1796474885") is None


def test_a_release_left_by_a_rollback_no_longer_counts(tmp_path, capsys, systemd):
    apply(capsys, tmp_path, "r0", 8000)
    apply(capsys, tmp_path, "r1", 8001)
    apply(capsys, tmp_path, "r2", 8002)  # a canary that failed: back to r1 by itself
    releases_module(capsys, tmp_path, "rollback")
    apply(capsys, tmp_path, "r3", 8003)  # staged, then undone when the upgrade stopped
    releases_module(capsys, tmp_path, "rollback")
    store = releases.Releases(str(tmp_path / "releases"))
    assert store.current("engine")["release"] == "r1"
    # Three kept: the undone r2 went first, r0 stays for the rollback of the whole deployment.
    assert [(m["release"], bool(m.get("undone"))) for m in store.kept("engine")] == [
        ("r0", False),
        ("r1", False),
        ("r3", True),
    ]
    _, done = releases_module(capsys, tmp_path, "rollback")
    assert done["services"][0]["target"] == "r0" and text(tmp_path, "engine.yaml") == "port: 8000\n"
    _, again = releases_module(capsys, tmp_path, "rollback")
    assert not again["changed"]
    # Applied again, r1 counts again.
    apply(capsys, tmp_path, "r1", 8001)
    assert store.target("engine")["release"] == "r0"
