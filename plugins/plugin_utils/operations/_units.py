# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""How a planned service runs under systemd: the ExecStart line and the environment file.

The plan fixes argv and env; the runtime only changes how ExecStart wraps them:

* ``host``: the argv itself (the program from the role's PATH);
* ``docker``: ``docker run`` of the planned image with the planned container
  options, ``--env-file``, ``--entrypoint argv[0]`` and ``argv[1:]``.

When the plan asks for shell set-up (``unset``, ``source``, ``prepend``), the
argv runs through ``bash -c '<set-up>; exec "$@"'`` so that it stays one
argument list.
"""

from __future__ import annotations

import shlex


class UnitError(ValueError):
    """A service the runtime cannot wrap."""


def systemd_quote(arg):
    """Quote one argument for an ExecStart= line (double quotes, C escapes, %% and $$)."""
    out = str(arg).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    out = out.replace("%", "%%").replace("$", "$$")
    return '"%s"' % out


def shell_lines(shell):
    """The bash set-up lines the plan asks for: unset, source, then PATH-like prepends."""
    lines = []
    if not shell:
        return lines
    if shell.get("unset"):
        lines.append("unset %s" % " ".join(shell["unset"]))
    for path in shell.get("source") or []:
        lines.append("source %s" % shlex.quote(path))
    for key, value in (shell.get("prepend") or {}).items():
        lines.append('export %s=%s"${%s:-}"' % (key, shlex.quote(value + ":"), key))
    return lines


def shell_prelude(shell):
    """The set-up as one bash command line, or '' when there is none."""
    return "; ".join(shell_lines(shell))


def _wrapped(argv, shell):
    prelude = shell_prelude(shell)
    if not prelude:
        return list(argv)
    return ["/bin/bash", "-c", prelude + '; exec "$@"', "k3-" + argv[0].split("/")[-1]] + list(argv)


def docker_options(container, name, env_file):
    """``docker run`` options for the planned container."""
    opts = ["--rm", "--name", name]
    c = container or {}
    if c.get("network"):
        opts += ["--network", c["network"]]
    if c.get("ipc"):
        opts += ["--ipc", c["ipc"]]
    if c.get("privileged"):
        opts.append("--privileged")
    if c.get("gpus"):
        opts += ["--gpus", str(c["gpus"])]
    if c.get("shm_size"):
        opts += ["--shm-size", str(c["shm_size"])]
    for dev in c.get("devices") or []:
        opts += ["--device", dev]
    for vol in c.get("volumes") or []:
        opts += ["-v", vol]
    for cap in c.get("cap_add") or []:
        opts += ["--cap-add", cap]
    for opt in c.get("security_opt") or []:
        opts += ["--security-opt", opt]
    for grp in c.get("group_add") or []:
        opts += ["--group-add", grp]
    for lim in c.get("ulimits") or []:
        opts += ["--ulimit", lim]
    opts += ["--env-file", env_file]
    return opts


def exec_start(service, runtime, env_file, docker="/usr/bin/docker"):
    """The ExecStart argument list of a planned service."""
    argv = list(service["argv"])
    shell = service.get("shell")
    if runtime == "host":
        return _wrapped(argv, shell)
    if runtime == "docker":
        if not service.get("image"):
            raise UnitError("service %s has no image to run with docker" % service["name"])
        wrapped = _wrapped(argv, shell)
        return (
            [docker, "run"]
            + docker_options(service.get("container"), service["unit"], env_file)
            + ["--entrypoint", wrapped[0], service["image"]]
            + wrapped[1:]
        )
    raise UnitError("unknown runtime %r (use host or docker)" % (runtime,))


def exec_line(service, runtime, env_file, docker="/usr/bin/docker"):
    """ExecStart= value: every argument quoted for systemd."""
    return " ".join(systemd_quote(a) for a in exec_start(service, runtime, env_file, docker))


def env_file_content(env, fmt):
    """An environment file: ``systemd`` (EnvironmentFile=, quoted) or ``docker`` (--env-file, literal)."""
    lines = []
    for key, value in (env or {}).items():
        value = str(value)
        if "\n" in value:
            raise UnitError("environment variable %s holds a newline, which no env file can carry" % key)
        if fmt == "docker":
            lines.append("%s=%s" % (key, value))
        elif fmt == "systemd":
            lines.append('%s="%s"' % (key, value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")))
        else:
            raise UnitError("unknown env file format %r" % (fmt,))
    return "".join(line + "\n" for line in lines)


def env_path(svc, config_dir):
    """The environment file of a planned service."""
    return "%s/%s.env" % (config_dir.rstrip("/"), svc["name"])


def unit_path(svc, unit_dir="/etc/systemd/system"):
    """The systemd unit file of a planned service."""
    return "%s/%s.service" % (unit_dir.rstrip("/"), svc["unit"])


def health_targets(services):
    """What a health wait needs of planned services (and nothing else: no env, no argv)."""
    return [{"name": s["name"], "unit": s["unit"], "url": (s.get("health") or {}).get("url")} for s in services or []]


def service_paths(services, config_dir, state_dir, unit_dir="/etc/systemd/system", releases_dir=None):
    """Every path the service_unit role writes for ``services``: what a teardown removes.

    Per service: its unit, its environment file, the configuration and secret files the plan gives
    it, its working folder (``state_dir/<name>``), the folders its program writes (``writes``,
    e.g. logs), its compile caches (``caches``) and, with ``releases_dir``, the releases kept of
    its files (``releases_dir/<name>``). Sorted, without repeats.
    """
    paths = set()
    for svc in services or []:
        if releases_dir:
            paths.add("%s/%s" % (releases_dir.rstrip("/"), svc["name"]))
        paths.add(unit_path(svc, unit_dir))
        paths.add(env_path(svc, config_dir))
        paths.add("%s/%s" % (state_dir.rstrip("/"), svc["name"]))
        for item in (svc.get("files") or []) + (svc.get("secret_files") or []):
            paths.add(item["path"])
        paths.update(svc.get("writes") or [])
        paths.update(cache["path"] for cache in svc.get("caches") or [])
    return sorted(paths)


def status_targets(services):
    """What kimi_k3.serving.service_status needs of planned services: no environment."""
    keys = ("name", "unit", "kind", "runtime", "argv", "health")
    return [{k: s.get(k) for k in keys} for s in services or []]


def bundle_files(services, config_dir, unit_dir="/etc/systemd/system"):
    """The files of ``services`` a support bundle takes, each with how it is redacted.

    Units and configuration files whole (``plain``), environment files with secret values redacted
    (``env``), secret files withheld (``secret``).
    """
    out, seen = [], set()

    def add(path, kind):
        if path not in seen:
            seen.add(path)
            out.append({"path": path, "kind": kind})

    for svc in services or []:
        add(unit_path(svc, unit_dir), "plain")
        add(env_path(svc, config_dir), "env")
        for item in svc.get("files") or []:
            add(item["path"], "plain")
        for item in svc.get("secret_files") or []:
            add(item["path"], "secret")
    return out


def bundle_urls(services):
    """HTTP snapshots of ``services`` for a support bundle: each health URL, and /metrics of the API servers."""
    out = []
    for svc in services or []:
        health = (svc.get("health") or {}).get("url")
        if health:
            out.append({"name": "%s-health.txt" % svc["name"], "url": health})
        if svc.get("url") and svc.get("kind") == "vllm":
            out.append({"name": "%s-metrics.txt" % svc["name"], "url": svc["url"].rstrip("/") + "/metrics"})
        elif svc.get("kind") == "router":
            # vllm-router serves Prometheus on a port of its own (--prometheus-port, default 29000,
            # on --prometheus-host, default 127.0.0.1): read on the host itself.
            argv = svc.get("argv") or []
            host = _flag(argv, "--prometheus-host") or "127.0.0.1"
            port = _flag(argv, "--prometheus-port") or "29000"
            host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
            out.append({"name": "%s-metrics.txt" % svc["name"], "url": "http://%s:%s/metrics" % (host, port)})
    return out


def _flag(argv, name):
    """The value of ``name`` in ``argv`` (``--flag value`` or ``--flag=value``), or None."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return str(argv[i + 1])
        if str(arg).startswith(name + "="):
            return str(arg).split("=", 1)[1]
    return None


def secret_names(services):
    """The environment variables that carry secrets in ``services`` (their ``secret_env`` names)."""
    return sorted({name for svc in services or [] for name in (svc.get("secret_env") or {})})
