"""A host's planned services applied in one step: the files rendered on the controller
(plugins/plugin_utils/operations/_unit_files.py) and the service_units module that writes them and
starts the units (plugins/modules/service_units.py, its module_utils planned_files, unit_starts and
service_wait, and its action plugin)."""

from __future__ import annotations

import json
import os
import stat

import pytest
from ansible.module_utils.testing import patch_module_args
from conftest import example_names, example_plan, service

from ansible_collections.kimi_k3.serving.plugins.action import service_units as service_units_action
from ansible_collections.kimi_k3.serving.plugins.module_utils import planned_files, service_wait, unit_starts
from ansible_collections.kimi_k3.serving.plugins.modules import service_units
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _unit_files as unit_files

KEY = "sk-k3-unit-files-1a2b3c"
# The service_unit role's defaults, as it passes them.
SETTINGS = {
    "config_dir": "/etc/kimi-k3",
    "state_dir": "/var/lib/kimi-k3",
    "path": [],
    "extra_env": {},
    "limits": {"NOFILE": 1048576, "MEMLOCK": "infinity"},
    "docker": "/usr/bin/docker",
}
ADMIN = "sk-k3-unit-files-admin-4d5e6f"

HOST_UNIT = """\
# Managed by kimi_k3.serving: engine (vllm, role engine, runtime host).
# The argv and environment are the plan's; edit the inventory and re-run, not this file.
[Unit]
Description=kimi_k3.serving engine (vllm)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
EnvironmentFile=/etc/kimi-k3/engine.env
# The program is looked up (and its children run) with the runtime's folders first.
ExecSearchPath=/opt/vllm/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
Environment="PATH=/opt/vllm/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
WorkingDirectory=/var/lib/kimi-k3/engine
ExecStart="vllm" "serve" "/m" "--port" "8000"
Restart=on-failure
RestartSec=5
TimeoutStopSec=60
KillMode=mixed
LimitNOFILE=1048576
LimitMEMLOCK=infinity

[Install]
WantedBy=multi-user.target
"""


def engine(**extra):
    svc = {
        "name": "engine",
        "unit": "k3-engine",
        "kind": "vllm",
        "role": "engine",
        "runtime": "host",
        "argv": ["vllm", "serve", "/m", "--port", "8000"],
        "env": {"VLLM_HOST_IP": "10.0.0.1"},
    }
    svc.update(extra)
    return svc


def test_host_unit_is_the_whole_expected_text():
    assert unit_files.unit_text(engine(), dict(SETTINGS, path=["/opt/vllm/bin"])) == HOST_UNIT


def test_the_stop_timeout_is_the_settings_and_must_exceed_vllms_shutdown_timeout():
    lines = unit_files.unit_text(engine(), dict(SETTINGS, stop_timeout=15)).splitlines()
    assert "TimeoutStopSec=15" in lines and "TimeoutStopSec=60" not in lines
    drains = engine(argv=["vllm", "serve", "/m", "--shutdown-timeout", "30"])
    assert "TimeoutStopSec=31" in unit_files.unit_text(drains, dict(SETTINGS, stop_timeout=31)).splitlines()
    for argv in (["vllm", "serve", "/m", "--shutdown-timeout", "30"], ["vllm", "serve", "--shutdown-timeout=60"]):
        with pytest.raises(ValueError) as err:
            unit_files.unit_text(
                engine(argv=argv), SETTINGS if "--shutdown-timeout=60" in argv else dict(SETTINGS, stop_timeout=30)
            )
        assert "service engine: its --shutdown-timeout" in str(err.value)
        assert "Fix: set service_unit_stop_timeout above" in str(err.value)
    for bad in (0, "15", True):
        with pytest.raises(ValueError, match="service_unit_stop_timeout must be a whole number"):
            unit_files.unit_text(engine(), dict(SETTINGS, stop_timeout=bad))


def test_docker_unit_requires_docker_and_removes_a_stale_container():
    svc = service(example_plan("mi355x-pd-1p1d-c48"), "mi355x-p1", "prefill")
    text = unit_files.unit_text(svc, dict(SETTINGS, path=["/opt/vllm/bin"]))
    lines = text.splitlines()
    assert "Requires=docker.service" in lines
    assert "After=network-online.target docker.service" in lines
    assert "ExecStartPre=-/usr/bin/docker rm -f k3-prefill" in lines
    assert "ExecStop=/usr/bin/docker stop k3-prefill" in lines
    assert lines[lines.index("[Service]") + 3].startswith("WorkingDirectory=")  # no PATH for docker
    assert next(x for x in lines if x.startswith("ExecStart=")).startswith('ExecStart="/usr/bin/docker" "run"')


@pytest.mark.parametrize("name", example_names())
def test_every_planned_service_gets_its_folder_env_unit_and_files(name):
    plan = example_plan(name)
    for host, entry in plan["hosts"].items():
        services = entry["services"]
        out = unit_files.service_files(services, SETTINGS, [KEY], ADMIN)
        paths = [f["path"] for f in out["files"]]
        assert len(paths) == len(set(paths)), (host, paths)
        for svc in services:
            mine = {f["path"]: f for f in out["files"] if f["service"] == svc["name"]}
            assert "/etc/systemd/system/%s.service" % svc["unit"] in mine
            env = mine["/etc/kimi-k3/%s.env" % svc["name"]]
            assert env["mode"] == "0600" and env["secret"]
            for item in svc.get("secret_files") or []:
                assert mine[item["path"]]["mode"] == "0600" and mine[item["path"]]["secret"]
            for item in svc.get("files") or []:
                assert mine[item["path"]]["content"] == item["content"] and not mine[item["path"]]["secret"]
            assert {"path": "/var/lib/kimi-k3/" + svc["name"], "mode": "0755"} in out["directories"]
        # Keys only where the plan puts them: never in a file that is not marked secret.
        for item in out["files"]:
            if not item["secret"]:
                assert KEY not in item["content"] and ADMIN not in item["content"], item["path"]
        phases = {u["name"]: u["phase"] for u in out["units"]}
        assert phases == {s["name"]: "followers" if s.get("after_started") else "node0" for s in services}
        assert out["secrets"] == [KEY, ADMIN]


def test_environment_file_holds_the_plan_env_the_extra_env_and_the_keys():
    svc = engine(secret_env={"VLLM_API_KEY": "primary", "K3_KEYS": "all"})
    text = unit_files.env_text(svc, dict(SETTINGS, extra_env={"TMPDIR": "/var/tmp"}), [KEY], ADMIN)
    assert text.splitlines() == [
        'VLLM_HOST_IP="10.0.0.1"',
        'TMPDIR="/var/tmp"',
        'VLLM_API_KEY="%s"' % ADMIN,
        'K3_KEYS="%s,%s"' % (KEY, ADMIN),
    ]


def test_settings_the_caller_left_out_are_named():
    with pytest.raises(ValueError, match="settings lack limits, docker"):
        unit_files.unit_text(engine(), {k: v for k, v in SETTINGS.items() if k not in ("docker", "limits")})


def test_keys_the_plan_wants_but_the_inventory_lacks_are_refused():
    with pytest.raises(ValueError, match="k3_api_key and k3_admin_api_key are not set"):
        unit_files.service_files([engine(secret_env={"VLLM_API_KEY": "primary"})], SETTINGS, None, None)


@pytest.mark.parametrize(
    ("states", "restart", "expected"),
    [
        ({"a": ("active", "enabled")}, set(), ([], [], [], [])),
        ({"a": ("inactive", "enabled")}, set(), ([], ["a"], [], [])),
        ({"a": ("failed", "disabled")}, set(), (["a"], ["a"], [], [])),
        ({"a": ("active", "enabled")}, {"a"}, ([], [], ["a"], [])),
        ({"a": ("inactive", "")}, {"a"}, (["a"], [], ["a"], [])),  # not written yet (check mode)
        ({"a": ("activating", "enabled")}, set(), ([], [], [], [])),
    ],
)
def test_start_plan(states, restart, expected):
    assert unit_starts.start_plan(["a"], states, restart) == expected


@pytest.mark.parametrize(
    ("state", "restart", "expected"),
    [
        ("active", set(), ([], [], [], ["a"])),  # running: reloaded
        ("inactive", set(), ([], ["a"], [], [])),  # stopped: its start reads the new files
        ("active", {"a"}, ([], [], ["a"], [])),  # a restart covers the reload
    ],
)
def test_a_unit_whose_reloadable_files_changed_is_reloaded_only_when_it_runs(state, restart, expected):
    assert unit_starts.start_plan(["a"], {"a": (state, "enabled")}, restart, {"a"}) == expected


def test_what_a_changed_file_does_to_its_service():
    changed = [
        {"service": "prometheus", "change": "reload"},
        {"service": "prometheus", "change": "none"},
        {"service": "alertmanager", "change": "none"},
        {"service": "engine", "change": "restart"},
        {"service": "engine", "change": "reload"},
        {"service": "router"},
    ]
    assert unit_starts.service_changes(changed) == ({"engine", "router"}, {"prometheus"})


def test_a_line_replaces_the_last_match_or_is_appended():
    text = '# comment\nARGS=""\nOTHER=1\n'
    assert planned_files.with_line(text, 'ARGS="--web.config.file=/w.yml"', "^ARGS=") == (
        '# comment\nARGS="--web.config.file=/w.yml"\nOTHER=1\n'
    )
    assert planned_files.with_line("OTHER=1", "ARGS=x", "^ARGS=") == "OTHER=1\nARGS=x\n"
    assert planned_files.with_line(None, "ARGS=x", "^ARGS=") == "ARGS=x\n"


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"path": "/x", "content": "a", "line": "b"}, "/x: give exactly one of content, source and line"),
        ({"path": "/x"}, "/x: give exactly one of content, source and line (got none)"),
        ({"path": "/x", "source": "/nowhere/cert.pem"}, "/x: its source /nowhere/cert.pem does not exist"),
    ],
)
def test_a_file_with_no_or_two_contents_or_a_missing_source_is_refused(item, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        planned_files.resolve_content(item)


class FakeModule:
    check_mode = False

    def __init__(self, out):
        self.out, self.calls = out, []

    def get_bin_path(self, name, required=False):
        return "/bin/" + name

    def run_command(self, argv):
        self.calls.append(argv)
        return 0, self.out, ""

    def fail_json(self, **kw):
        raise AssertionError(kw)


def test_unit_states_are_read_in_one_call():
    out = (
        "Id=k3-a.service\nActiveState=active\nUnitFileState=enabled\n\n"
        "Id=k3-b.service\nActiveState=inactive\nUnitFileState=\n"
    )
    module = FakeModule(out)
    states = unit_starts.Systemd(module).states(["k3-a", "k3-b"])
    assert states == {"k3-a": ("active", "enabled"), "k3-b": ("inactive", "")}
    assert module.calls == [
        ["/bin/systemctl", "show", "--property=Id,ActiveState,UnitFileState", "--", "k3-a.service", "k3-b.service"]
    ]


@pytest.fixture
def as_root(monkeypatch):
    """The module owns files by root; a test run without root records the owner instead."""
    if os.geteuid() != 0:
        monkeypatch.setattr(os, "fchown", lambda *a: None)
        monkeypatch.setattr(os, "chown", lambda *a: None)
        monkeypatch.setattr(planned_files, "file_changes", _ignore_owner(planned_files.file_changes))


def _ignore_owner(func):
    def wrapped(*args, **kwargs):
        return [r for r in func(*args, **kwargs) if r != "owner"]

    return wrapped


def run_module(capsys, args, check=False, diff=False):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with patch_module_args(args), pytest.raises(SystemExit):
        service_units.main()
    out = capsys.readouterr().out
    return out, json.loads(out)


def planned(tmp_path):
    conf = tmp_path / "conf"
    return {
        "directories": [{"path": str(conf), "mode": "0755"}, {"path": str(tmp_path / "var" / "work"), "mode": "0750"}],
        "files": [
            {"path": str(conf / "engine.yaml"), "content": "port: 8000\n", "mode": "0644", "service": "engine"},
            {
                "path": str(conf / "engine.env"),
                "content": "KEY=%s\n" % KEY,
                "mode": "0600",
                "service": "engine",
                "secret": True,
            },
            {"path": str(conf / "router.yaml"), "content": "a: 1\n", "service": "router"},
        ],
        "secrets": [KEY],
    }


def test_module_writes_once_then_changes_nothing(tmp_path, capsys, as_root):
    args = planned(tmp_path)
    _, first = run_module(capsys, args)
    assert first["changed"] and first["changed_services"] == ["engine", "router"]
    assert {f["path"]: f["changes"] for f in first["changed_files"]} == {f["path"]: ["created"] for f in args["files"]}
    env = tmp_path / "conf" / "engine.env"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    # A folder whose parents are missing is made with them (mkdir -p), as on a host's first deploy.
    assert stat.S_IMODE((tmp_path / "var" / "work").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "var").stat().st_mode) == 0o755
    assert env.read_text() == "KEY=%s\n" % KEY
    _, second = run_module(capsys, args)
    assert not second["changed"] and second["changed_services"] == [] and not second["reloaded"]
    assert second["settled"] is False  # nothing to settle


def test_a_call_that_changed_nothing_reports_whether_its_services_are_settled(tmp_path, capsys, as_root, monkeypatch):
    checked = []
    monkeypatch.setattr(service_units, "later_phases_idle", lambda module, systemd: True)
    monkeypatch.setattr(service_wait.Wait, "healthy_now", lambda self, services: checked.append(services) or True)
    args = dict(planned(tmp_path), settle=[{"name": "engine", "unit": "k3-engine", "url": "http://e/health"}])
    _, first = run_module(capsys, args)
    assert first["changed"] and first["settled"] is False and checked == []  # a change: the later call waits
    _, again = run_module(capsys, args, check=True)
    assert again["settled"] is False and checked == []  # check mode checks nothing
    _, second = run_module(capsys, args)
    assert not second["changed"] and second["settled"] is True and len(checked) == 1
    monkeypatch.setattr(service_wait.Wait, "healthy_now", lambda self, services: False)
    _, third = run_module(capsys, args)
    assert third["settled"] is False


def test_module_in_check_mode_reports_a_diff_per_file_without_showing_a_key(tmp_path, capsys, as_root):
    args = planned(tmp_path)
    run_module(capsys, args)
    (tmp_path / "conf" / "engine.yaml").write_text("port: 9000\n")
    os.chmod(tmp_path / "conf" / "router.yaml", 0o666)
    args["files"][1]["content"] = "KEY=%s\nMORE=1\n" % KEY
    raw, result = run_module(capsys, args, check=True, diff=True)
    assert result["changed"] and result["changed_services"] == ["engine", "router"]
    assert {f["path"].rsplit("/", 1)[1]: f["changes"] for f in result["changed_files"]} == {
        "engine.yaml": ["content"],
        "engine.env": ["content"],
        "router.yaml": ["mode"],
    }
    diffs = {d["before_header"].rsplit("/", 1)[1]: d for d in result["diff"]}
    assert diffs["engine.yaml (content)"]["before"] == "port: 9000\n"
    assert diffs["engine.yaml (content)"]["after"] == "port: 8000\n"
    assert diffs["engine.env (content)"]["after"] == planned_files.SECRET_SHOWN
    assert KEY not in raw
    # Nothing was written in check mode.
    assert (tmp_path / "conf" / "engine.yaml").read_text() == "port: 9000\n"
    assert stat.S_IMODE((tmp_path / "conf" / "router.yaml").stat().st_mode) == 0o666


def test_a_file_whose_folder_is_missing_fails_naming_it(tmp_path, capsys, as_root):
    args = {"files": [{"path": str(tmp_path / "nowhere" / "x.conf"), "content": "x\n", "service": "engine"}]}
    _, result = run_module(capsys, args)
    assert result["failed"] and "nowhere/x.conf: its folder does not exist" in result["msg"]


def test_a_refused_content_fails_naming_the_file_and_leaves_it_as_it_was(tmp_path, capsys, as_root):
    table = tmp_path / "firewall.nft"
    table.write_text("old\n")
    os.chmod(table, 0o644)
    checker = tmp_path / "check"
    checker.write_text('#!/bin/sh\ngrep -q good "$2" || { echo "Error: syntax error in $2" >&2; exit 1; }\n')
    os.chmod(checker, 0o755)
    item = {"path": str(table), "content": "bad\n", "service": "firewall", "validate": "%s -f %%s" % checker}
    _, result = run_module(capsys, {"files": [item]})
    assert result["failed"] and result["msg"].startswith(
        "%s: the new content was refused by %s (rc=1)" % (table, checker)
    )
    assert "Error: syntax error in" in result["msg"]
    assert table.read_text() == "old\n"
    item["content"] = "good\n"
    _, result = run_module(capsys, {"files": [item]})
    assert result["changed"] and table.read_text() == "good\n"


def test_a_failing_probe_restarts_an_active_unit(monkeypatch):
    calls = []

    class Module(FakeModule):
        params = {
            "start": [
                {"name": "firewall", "unit": "k3-firewall", "phase": "node0", "probe": ["nft", "list", "table"]},
                {"name": "engine", "unit": "k3-engine", "phase": "node0", "probe": None},
            ],
            "phases": ["node0"],
            "restart": [],
        }

        def run_command(self, argv):
            calls.append(argv)
            return (1, "", "no such table") if argv[0] == "nft" else (0, "", "")

    module = Module("")
    active = {"k3-firewall": ("active", "enabled"), "k3-engine": ("active", "enabled")}
    monkeypatch.setattr(unit_starts.Systemd, "states", lambda self, units: active)
    assert unit_starts.run_starts(module, unit_starts.Systemd(module), []) == ([], [], ["k3-firewall"], [])
    assert ["/bin/systemctl", "restart", "--", "k3-firewall.service"] in calls


@pytest.mark.parametrize(
    ("states", "restart", "probe_rc", "idle"),
    [
        ({"k3-f": ("active", "enabled")}, [], 0, True),
        ({"k3-f": ("inactive", "enabled")}, [], 0, False),  # the later call would start it
        ({"k3-f": ("active", "disabled")}, [], 0, False),  # ... enable it
        ({"k3-f": ("active", "enabled")}, ["f"], 0, False),  # ... restart it, as asked
        ({"k3-f": ("active", "enabled")}, [], 1, False),  # ... restart it, its probe failing
    ],
)
def test_the_later_phases_are_idle_only_when_their_call_would_do_nothing(monkeypatch, states, restart, probe_rc, idle):
    class Module(FakeModule):
        params = {
            "start": [
                {"name": "engine", "unit": "k3-engine", "phase": "node0", "probe": None},
                {"name": "f", "unit": "k3-f", "phase": "followers", "probe": ["probe-f"]},
            ],
            "phases": ["node0"],
            "restart": restart,
        }

        def run_command(self, argv):
            self.calls.append(argv)
            return probe_rc, "", ""

    module = Module("")
    # The node 0 unit (this call's phase) is inactive: not the later call's business.
    monkeypatch.setattr(unit_starts.Systemd, "states", lambda self, units: dict(states, **{"k3-engine": ("", "")}))
    assert unit_starts.later_phases_idle(module, unit_starts.Systemd(module)) is idle


def test_healthy_now_checks_each_service_once_without_waiting(monkeypatch):
    answers = {"http://a/health": 200, "http://b/health": 503}
    seen = []
    monkeypatch.setattr(service_wait, "http_status", lambda url, key, ca: seen.append(url) or answers[url])
    units = Units({"k3-a": [("active", 0)], "k3-b": [("active", 0)], "k3-f": [("activating", 0)]})
    wait = service_wait.Wait(units, timeout=30, delay=0)
    assert wait.healthy_now([{"name": "a", "unit": "k3-a", "health": {"url": "http://a/health"}}]) is True
    both = [{"name": "a", "unit": "k3-a", "url": "http://a/health"}, {"name": "f", "unit": "k3-f"}]
    assert wait.healthy_now(both) is False
    assert wait.healthy_now([{"name": "b", "unit": "k3-b", "url": "http://b/health"}]) is False
    assert seen == ["http://a/health", "http://a/health", "http://b/health"]


def test_a_source_a_line_a_group_and_what_changes_do_in_one_call(tmp_path, capsys, as_root, monkeypatch):
    """The monitoring stage's kinds of file: a certificate from a host path (group-readable), a line in
    a distribution's settings file, and files that reload, restart or leave their daemon alone."""
    monkeypatch.setattr(planned_files, "group_id", lambda name: 0)
    calls = []
    monkeypatch.setattr(unit_starts.Systemd, "__init__", lambda self, module: setattr(self, "module", module))
    monkeypatch.setattr(unit_starts.Systemd, "run", lambda self, *args: calls.append(args) or "")
    monkeypatch.setattr(unit_starts.Systemd, "states", lambda self, units: {u: ("active", "enabled") for u in units})
    cert = tmp_path / "site-cert.pem"
    cert.write_text("CERT\n")
    defaults = tmp_path / "default-prometheus"
    defaults.write_text('# Set the command-line arguments\nARGS=""\n')
    args = {
        "files": [
            {
                "path": str(tmp_path / "web.pem"),
                "source": str(cert),
                "group": "prometheus",
                "mode": "0640",
                "service": "prometheus",
                "change": "none",
            },
            {
                "path": str(tmp_path / "rules.yml"),
                "content": "groups: []\n",
                "service": "prometheus",
                "change": "reload",
            },
            {
                "path": str(defaults),
                "line": 'ARGS="--web.config.file=/w.yml"',
                "regexp": "^ARGS=",
                "service": "alertmanager",
            },
        ],
        "start": [{"name": "prometheus", "unit": "prometheus"}, {"name": "alertmanager", "unit": "alertmanager"}],
    }
    _, first = run_module(capsys, args)
    assert (tmp_path / "web.pem").read_text() == "CERT\n"
    assert stat.S_IMODE((tmp_path / "web.pem").stat().st_mode) == 0o640
    assert defaults.read_text() == '# Set the command-line arguments\nARGS="--web.config.file=/w.yml"\n'
    assert first["reloaded_units"] == ["prometheus"] and first["restarted"] == ["alertmanager"]
    assert ("reload", "--", "prometheus.service") in calls and ("restart", "--", "alertmanager.service") in calls
    calls.clear()
    _, second = run_module(capsys, args)
    assert not second["changed"] and calls == []
    # Only the certificate changes: nothing restarts or reloads (the daemon reads it by itself).
    cert.write_text("NEW\n")
    _, third = run_module(capsys, args)
    assert third["changed_services"] == ["prometheus"] and third["restarted"] == [] and third["reloaded_units"] == []


def test_check_mode_does_not_run_a_validator_its_own_run_would_install(tmp_path, capsys, as_root):
    item = {
        "path": str(tmp_path / "t.nft"),
        "content": "x\n",
        "service": "firewall",
        "validate": "/nonexistent/nft -c -f %s",
    }
    _, result = run_module(capsys, {"files": [item]}, check=True)
    assert result["changed"] and not (tmp_path / "t.nft").exists()
    _, result = run_module(capsys, {"files": [item]})
    assert result["failed"] and result["msg"] == "%s: its check /nonexistent/nft is not installed on this host" % (
        tmp_path / "t.nft"
    )


def test_a_missing_required_program_fails_with_its_message_and_changes_nothing(tmp_path, capsys, as_root):
    args = planned(tmp_path)
    msg = "host k3-a: engine_venv: /opt/vllm/bin/vllm does not exist. Fix: install vLLM"
    args["requires"] = [{"path": str(tmp_path / "opt" / "vllm" / "bin" / "vllm"), "msg": msg}]
    for check in (True, False):
        _, result = run_module(capsys, args, check=check)
        assert result["failed"] and result["msg"] == msg
    assert not (tmp_path / "conf").exists()
    (tmp_path / "vllm").write_text("")
    args["requires"][0]["path"] = str(tmp_path / "vllm")
    _, result = run_module(capsys, args)
    assert result["changed"] and (tmp_path / "conf" / "engine.yaml").exists()


class Units:
    """``systemctl show`` of units whose ActiveState/NRestarts follow a script, one entry per poll."""

    def __init__(self, script):
        self.script, self.polls = script, {}

    def __call__(self, argv, check_rc=False):
        if argv[0] == "journalctl":
            return 0, "Traceback: the engine crashed\n", ""
        unit = argv[2]
        n = self.polls.get(unit, 0)
        self.polls[unit] = n + 1
        states = self.script[unit]
        active, restarts, *more = states[min(n, len(states) - 1)]
        sub, status = more or ("running" if active == "active" else "start", 0)
        return 0, "ActiveState=%s\nSubState=%s\nNRestarts=%d\nExecMainStatus=%d\n" % (active, sub, restarts, status), ""


def test_a_wait_polls_every_service_at_once_until_healthy(monkeypatch):
    answers = {"http://a/health": [None, 503, 200], "http://b/health": [200]}
    seen = {u: 0 for u in answers}

    def status(url, key, ca):
        seen[url] += 1
        return answers[url][min(seen[url] - 1, len(answers[url]) - 1)]

    monkeypatch.setattr(service_wait, "http_status", status)
    units = Units({"k3-a": [("activating", 0), ("active", 0)], "k3-b": [("active", 0)], "k3-f": [("active", 0)]})
    wait = service_wait.Wait(units, timeout=30, delay=0)
    services = [
        {"name": "a", "unit": "k3-a", "url": "http://a/health"},
        {"name": "b", "unit": "k3-b", "url": "http://b/health"},
        {"name": "f", "unit": "k3-f", "url": None},
    ]
    results, _ = wait.poll(services)
    assert [(r["name"], r["state"]) for r in results] == [("a", "healthy"), ("b", "healthy"), ("f", "healthy")]
    assert seen == {"http://a/health": 3, "http://b/health": 1}
    assert wait.failures(services, results) == ""


def test_a_unit_that_restarts_after_a_crash_fails_the_wait_with_its_journal(monkeypatch):
    monkeypatch.setattr(service_wait, "http_status", lambda url, key, ca: None)
    units = Units({"k3-a": [("active", 2), ("activating", 2), ("activating", 3)], "k3-b": [("inactive", 0)]})
    wait = service_wait.Wait(units, timeout=30, delay=0, journal_lines=5)
    services = service_wait.with_urls(
        [{"name": "a", "unit": "k3-a", "health": {"url": "http://a/health"}}, {"name": "b", "unit": "k3-b"}]
    )
    results, _ = wait.poll(services)
    assert [(r["name"], r["state"]) for r in results] == [("a", "failed"), ("b", "stopped")]
    msg = wait.failures(services, results)
    assert "service a (unit k3-a) has failed after" in msg and "(no answer from http://a/health)" in msg
    assert "service b (unit k3-b) is not running" in msg
    assert "--- journal (last 5 lines) ---\nTraceback: the engine crashed" in msg


def test_a_start_systemd_could_not_place_in_its_cgroup_is_retried_but_not_forever(monkeypatch):
    """219/CGROUP: the processes of the stop before were not all gone; systemd starts it again."""
    monkeypatch.setattr(service_wait, "http_status", lambda url, key, ca: 200)
    again = ("activating", 0, "auto-restart", 219)
    units = Units(
        {
            "k3-a": [again, again, ("activating", 1), ("active", 1)],
            "k3-b": [
                again,
                ("activating", 1, "auto-restart", 219),
                ("activating", 2, "auto-restart", 219),
                ("active", 3),
            ],
            "k3-c": [("activating", 0, "auto-restart", 1), ("activating", 1), ("active", 1)],
        }
    )
    wait = service_wait.Wait(units, timeout=30, delay=0)
    services = [{"name": n, "unit": "k3-" + n, "url": "http://%s/health" % n} for n in "abc"]
    results, _ = wait.poll(services)
    # a: one retry, then healthy; b: a third 219 is a failure; c: a crash (status 1) is one at once.
    assert [(r["name"], r["state"]) for r in results] == [("a", "healthy"), ("b", "failed"), ("c", "failed")]


def test_services_on_other_hosts_are_only_polled_and_a_timeout_is_not_a_failure(monkeypatch):
    monkeypatch.setattr(service_wait, "http_status", lambda url, key, ca: None)
    units = Units({})
    wait = service_wait.Wait(units, timeout=0, delay=0)
    services = [{"name": "meta", "unit": "k3-meta", "url": "http://front:8088/health"}]
    results, _ = wait.poll(services, check_units=False)
    assert results[0]["state"] == "timeout" and units.polls == {}
    assert wait.failures(services, results) == ""


class Host:
    """The modules an action runs on a host: service_units finds nft missing until the package module ran."""

    def __init__(self, install_fails=False):
        self.calls, self.has_nft, self.install_fails = [], False, install_fails

    def __call__(self, module, args):
        self.calls.append((module, dict(args)))
        if module == "ansible.builtin.package":
            if self.install_fails:
                return {"failed": True, "msg": "No package matching 'nftables' is available"}
            self.has_nft = True
            return {"changed": True}
        if args.get("programs") and not self.has_nft:
            return {"changed": False, "missing_programs": ["/usr/sbin/nft"]}
        return {"changed": False, "changed_services": [], "missing_programs": []}


INSTALL = [{"module": "ansible.builtin.package", "args": {"name": "nftables", "state": "present"}}]


def test_a_host_with_the_programs_gets_one_call_and_no_install():
    host = Host()
    host.has_nft = True
    result = service_units_action.apply({"programs": ["/usr/sbin/nft"], "install": INSTALL, "files": []}, host)
    assert not result["changed"] and "installed" not in result
    assert host.calls == [("kimi_k3.serving.service_units", {"programs": ["/usr/sbin/nft"], "files": []})]


def test_a_missing_program_is_installed_then_the_module_runs_again_without_the_check():
    host = Host()
    result = service_units_action.apply({"programs": ["/usr/sbin/nft"], "install": INSTALL, "files": []}, host)
    assert [c[0] for c in host.calls] == [
        "kimi_k3.serving.service_units",
        "ansible.builtin.package",
        "kimi_k3.serving.service_units",
    ]
    assert host.calls[2][1] == {"files": []}
    assert result["changed"] and result["installed"] == [{"module": "ansible.builtin.package", "changed": True}]
    assert result["missing_programs"] == ["/usr/sbin/nft"]


def test_an_install_that_fails_or_is_missing_fails_naming_the_program():
    result = service_units_action.apply({"programs": ["/usr/sbin/nft"], "install": INSTALL}, Host(install_fails=True))
    assert result["failed"] and result["msg"] == (
        "installing /usr/sbin/nft with ansible.builtin.package failed: No package matching 'nftables' is available"
    )
    result = service_units_action.apply({"programs": ["/usr/sbin/nft"]}, Host())
    assert result["failed"] and result["msg"] == "/usr/sbin/nft missing, and no install step is given"
    result = service_units_action.apply({"install": [{"args": {}}]}, Host())
    assert result["failed"] and "install[0] needs module" in result["msg"]


class AptlessHost(Host):
    """A host without apt: ansible.builtin.apt fails there, the package module installs."""

    def __call__(self, module, args):
        if module == "ansible.builtin.apt":
            self.calls.append((module, dict(args)))
            return {"failed": True, "msg": "Failed to find required executable apt-get"}
        return super().__call__(module, args)


FRONT_DOOR_INSTALL = [
    {
        "module": "ansible.builtin.apt",
        "args": {"name": "nftables", "policy_rc_d": 101},
        "fallback": {"module": "ansible.builtin.package", "args": {"name": "nftables"}},
    },
    {"module": "ansible.builtin.systemd_service", "args": {"name": "x", "enabled": False}, "skip_in_check_mode": True},
]


def test_a_step_that_fails_runs_its_fallback_and_a_later_step_still_runs():
    host = AptlessHost()
    result = service_units_action.apply({"programs": ["/usr/sbin/nft"], "install": FRONT_DOOR_INSTALL}, host)
    assert [c[0] for c in host.calls] == [
        "kimi_k3.serving.service_units",
        "ansible.builtin.apt",
        "ansible.builtin.package",
        "ansible.builtin.systemd_service",
        "kimi_k3.serving.service_units",
    ]
    assert result["installed"] == [
        {"module": "ansible.builtin.package", "changed": True},
        {"module": "ansible.builtin.systemd_service", "changed": False},
    ]
    assert not result.get("failed") and result["changed"]


def test_a_fallback_that_fails_too_fails_naming_it():
    host = AptlessHost(install_fails=True)
    result = service_units_action.apply({"programs": ["/usr/sbin/nft"], "install": FRONT_DOOR_INSTALL}, host)
    assert result["failed"] and result["msg"].startswith("installing /usr/sbin/nft with ansible.builtin.package failed")
    assert [c[0] for c in host.calls][-1] == "ansible.builtin.package"


def test_in_check_mode_a_step_marked_so_does_not_run():
    host = AptlessHost()
    install = [FRONT_DOOR_INSTALL[0]["fallback"], FRONT_DOOR_INSTALL[1]]
    result = service_units_action.apply({"programs": ["/usr/sbin/nft"], "install": install}, host, check_mode=True)
    assert "ansible.builtin.systemd_service" not in [c[0] for c in host.calls]
    assert result["installed"][1] == {"module": "ansible.builtin.systemd_service", "changed": False, "skipped": True}
    bad = [{"module": "m", "fallback": {"args": {}}}]
    result = service_units_action.apply({"programs": ["/x"], "install": bad}, host)
    assert result["failed"] and "install[0].fallback needs module" in result["msg"]


def test_the_module_stops_before_anything_when_a_program_is_missing(tmp_path, capsys, as_root):
    args = dict(planned(tmp_path), programs=[str(tmp_path / "nft")])
    _, result = run_module(capsys, args)
    assert not result["changed"] and result["missing_programs"] == [str(tmp_path / "nft")]
    assert "changed_files" not in result
    assert not (tmp_path / "conf").exists()
