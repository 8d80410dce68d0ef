# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Every file a host's planned services need, rendered on the controller in one step.

The service_unit role hands the result to the ``service_units`` module, which writes the files
on the host in one round trip. Per service, in this order: its working folder, the configuration
files the plan renders, its environment file (0600), its secret files (0600) and its systemd unit.
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _units as units
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_auth import (
    resolve_secret_env,
    secret_file_content,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._profiles import argv_flags, flag_key
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import secret_keys

SYSTEM_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
# What the caller (the service_unit role, from its defaults) passes in ``settings``; ``stop_timeout``
# (TimeoutStopSec=, seconds) may be left out.
SETTINGS = ("config_dir", "state_dir", "path", "extra_env", "limits", "docker")
STOP_TIMEOUT = 60


def _settings(settings):
    missing = [k for k in SETTINGS if k not in (settings or {})]
    if missing:
        raise ValueError("service_files: settings lack %s" % ", ".join(missing))
    return settings


def stop_timeout(svc, settings):
    """TimeoutStopSec= of ``svc``: how long systemd lets it stop before it kills what is left. It must
    exceed a vLLM --shutdown-timeout (the time vLLM gives running requests to finish), or systemd kills
    the engine while it drains."""
    value = settings.get("stop_timeout", STOP_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("service_unit_stop_timeout must be a whole number of seconds, 1 or more (got %r)" % (value,))
    seconds = argv_flags([str(a) for a in svc.get("argv") or []]).get(flag_key("--shutdown-timeout"), "")
    if seconds.isdigit() and int(seconds) >= value:
        raise ValueError(
            "service %s: its --shutdown-timeout %s is not below service_unit_stop_timeout %d, so systemd would "
            "kill vLLM while it drains. Fix: set service_unit_stop_timeout above %s (or lower --shutdown-timeout)"
            % (svc["name"], seconds, value, seconds)
        )
    return value


def unit_text(svc, settings=None):
    """The systemd unit of a planned service: its runtime's ExecStart, environment file and limits."""
    opts = _settings(settings)
    docker = svc["runtime"] == "docker"
    env_file = units.env_path(svc, opts["config_dir"])
    lines = [
        "# Managed by kimi_k3.serving: %s (%s, role %s, runtime %s)."
        % (svc["name"], svc["kind"], svc.get("role", ""), svc["runtime"]),
        "# The argv and environment are the plan's; edit the inventory and re-run, not this file.",
        "[Unit]",
        "Description=kimi_k3.serving %s (%s)" % (svc["name"], svc["kind"]),
        "Wants=network-online.target",
        "After=network-online.target" + (" docker.service" if docker else ""),
    ]
    if docker:
        lines.append("Requires=docker.service")
    lines += ["", "[Service]", "Type=simple", "EnvironmentFile=" + env_file]
    if svc["runtime"] == "host" and opts["path"]:
        search = ":".join(list(opts["path"]) + SYSTEM_PATH)
        lines += [
            "# The program is looked up (and its children run) with the runtime's folders first.",
            "ExecSearchPath=" + search,
            'Environment="PATH=%s"' % search,
        ]
    lines.append("WorkingDirectory=%s/%s" % (opts["state_dir"].rstrip("/"), svc["name"]))
    if docker:
        lines.append("ExecStartPre=-%s rm -f %s" % (opts["docker"], svc["unit"]))
    lines.append("ExecStart=" + units.exec_line(svc, svc["runtime"], env_file, opts["docker"]))
    if docker:
        lines.append("ExecStop=%s stop %s" % (opts["docker"], svc["unit"]))
    # A headless follower that lost its node 0 exits 0 (vLLM 0.32 after its start-up handshake times
    # out, or when its engine core dies): on-failure would leave it down, so followers restart always.
    restart = "always" if svc.get("after_started") else "on-failure"
    lines += ["Restart=" + restart, "RestartSec=5", "TimeoutStopSec=%d" % stop_timeout(svc, opts), "KillMode=mixed"]
    lines += ["Limit%s=%s" % (name, value) for name, value in opts["limits"].items()]
    lines += ["", "[Install]", "WantedBy=multi-user.target"]
    return "\n".join(lines) + "\n"


def env_text(svc, settings=None, keys=None, admin=None):
    """The environment file of a planned service: the plan's env, the runtime's extra env and its keys."""
    opts = _settings(settings)
    env = dict(svc.get("env") or {})
    env.update(opts["extra_env"] or {})
    env.update(resolve_secret_env(svc.get("secret_env") or {}, keys, admin))
    return units.env_file_content(env, "docker" if svc["runtime"] == "docker" else "systemd")


def service_files(services, settings=None, keys=None, admin=None):
    """What the ``service_units`` module writes for ``services``: folders and files.

    Returns ``directories`` (``{path, mode}``), ``files`` (``{path, content, mode, service, secret}``;
    ``secret`` files hold keys: their content is never shown, their mode is 0600), ``units``
    (``{name, unit, phase}``: ``node0`` starts first, ``followers`` once every node 0 has started),
    ``caches`` (``{path, key, service}``: compile caches, emptied when their key, the image, changes)
    and ``secrets`` (the key values, which the module masks wherever they would show).
    """
    opts = _settings(settings)
    directories = [{"path": opts["config_dir"], "mode": "0755"}]
    files, service_units = [], []
    for svc in services or []:
        name = svc["name"]
        directories.append({"path": "%s/%s" % (opts["state_dir"].rstrip("/"), name), "mode": "0755"})
        for item in svc.get("files") or []:
            files.append(_file(item["path"], item["content"], item.get("mode") or "0644", name, False))
        env = env_text(svc, opts, keys, admin)
        files.append(_file(units.env_path(svc, opts["config_dir"]), env, "0600", name, True))
        for item in svc.get("secret_files") or []:
            files.append(_file(item["path"], secret_file_content(item, keys, admin), "0600", name, True))
        files.append(_file(units.unit_path(svc), unit_text(svc, opts), "0644", name, False))
        phase = "followers" if svc.get("after_started") else "node0"
        service_units.append({"name": name, "unit": svc["unit"], "phase": phase})
    caches = [dict(cache, service=svc["name"]) for svc in services or [] for cache in svc.get("caches") or []]
    return {
        "directories": directories,
        "files": files,
        "units": service_units,
        "caches": caches,
        "secrets": secret_values(keys, admin),
    }


def _file(path, content, mode, service, secret):
    return {"path": path, "content": content, "mode": str(mode), "service": service, "secret": secret}


def secret_values(keys=None, admin=None):
    """Every key value the files may hold: the module masks each wherever it would show."""
    return secret_keys(keys) + secret_keys(admin)
