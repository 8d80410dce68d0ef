"""A host's services removed in one call (plugins/modules/service_removal.py): the units installed are
stopped and disabled in one systemctl call, the paths that exist go, systemd reloads once when a unit
file went; check mode and a second run change nothing."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.kimi_k3.serving.plugins.modules import service_removal


@pytest.fixture
def systemctl(monkeypatch):
    """Every command the module runs, answered with success."""
    calls = []

    def run_command(self, argv, **kwargs):
        calls.append(list(argv))
        return 0, "", ""

    monkeypatch.setattr(service_removal.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(service_removal.AnsibleModule, "get_bin_path", lambda self, name, **kw: "/bin/" + name)
    return calls


def run(capsys, check=False, diff=False, **args):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with patch_module_args(args), pytest.raises(SystemExit):
        service_removal.main()
    return json.loads(capsys.readouterr().out)


def deployed(tmp_path):
    """A host with two units installed (a third planned one is not), their env files and a working folder."""
    units = tmp_path / "units"
    conf = tmp_path / "conf"
    work = tmp_path / "work" / "engine" / "cache"
    for folder in (units, conf, work):
        folder.mkdir(parents=True)
    for name in ("k3-engine", "k3-router"):
        (units / (name + ".service")).write_text("[Service]\n")
    (conf / "engine.env").write_text("VLLM_API_KEY=x\n")
    (work / "blob").write_text("1")
    paths = [
        str(units / "k3-engine.service"),
        str(units / "k3-router.service"),
        str(units / "k3-decode.service"),
        str(conf / "engine.env"),
        str(tmp_path / "work" / "engine"),
    ]
    return {"units": ["k3-engine", "k3-router", "k3-decode"], "paths": paths, "unit_dir": str(units)}


def test_one_call_stops_the_installed_units_removes_the_files_and_reloads_once(tmp_path, capsys, systemctl):
    args = deployed(tmp_path)
    out = run(capsys, **args)
    assert out["changed"] and out["stopped"] == ["k3-engine", "k3-router"]
    assert out["removed"] == [p for p in args["paths"] if "k3-decode" not in p]
    assert out["reloaded"] is True
    assert systemctl == [
        ["/bin/systemctl", "disable", "--now", "--", "k3-engine.service", "k3-router.service"],
        ["/bin/systemctl", "reset-failed", "--", "k3-engine.service", "k3-router.service"],
        ["/bin/systemctl", "daemon-reload"],
    ]
    assert not any((tmp_path / "units").iterdir()) and not (tmp_path / "work" / "engine").exists()
    assert (tmp_path / "work").is_dir()  # only the paths given go, not their parents
    again = run(capsys, **args)
    assert (again["changed"], again["stopped"], again["removed"], again["reloaded"]) == (False, [], [], False)
    assert len(systemctl) == 3  # nothing to stop, remove or reload: no systemctl call


def test_check_mode_says_what_would_go_with_a_diff_and_touches_nothing(tmp_path, capsys, systemctl):
    args = deployed(tmp_path)
    out = run(capsys, check=True, diff=True, **args)
    assert out["changed"] and out["stopped"] == ["k3-engine", "k3-router"] and out["reloaded"]
    assert out["diff"]["before"].splitlines()[:2] == ["unit k3-engine", "unit k3-router"]
    assert out["diff"]["before"].splitlines()[2:] == out["removed"] and out["diff"]["after"] == ""
    assert systemctl == []
    assert all((tmp_path / "units" / (u + ".service")).exists() for u in ("k3-engine", "k3-router"))


def test_a_folder_of_other_files_alone_removes_without_systemd(tmp_path, capsys, systemctl):
    (tmp_path / "state").mkdir()
    out = run(capsys, paths=[str(tmp_path / "state")], unit_dir=str(tmp_path))
    assert out["removed"] == [str(tmp_path / "state")] and out["reloaded"] is False
    assert systemctl == []


def test_a_relative_path_is_refused_naming_it_before_anything_changes(tmp_path, capsys, systemctl):
    args = deployed(tmp_path)
    args["paths"].append("etc/kimi-k3")
    out = run(capsys, **args)
    assert out["failed"] and "etc/kimi-k3 is not an absolute path" in out["msg"]
    assert systemctl == [] and (tmp_path / "conf" / "engine.env").exists()


def test_the_units_files_go_without_being_listed(tmp_path, capsys, systemctl):
    args = deployed(tmp_path)
    args["paths"] = args["paths"][3:]  # only the env file and the working folder
    out = run(capsys, **args)
    assert out["stopped"] == ["k3-engine", "k3-router"] and out["reloaded"] is True
    assert out["removed"][:2] == [
        str(tmp_path / "units" / "k3-engine.service"),
        str(tmp_path / "units" / "k3-router.service"),
    ]
    assert not any((tmp_path / "units").iterdir())
