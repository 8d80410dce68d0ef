# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""API keys in the plan: which service reads which key from where. Never the keys themselves.

``k3_api_key`` is one key or a list. The plan records how many there are and, for every
service, the environment variables and files the service_unit role fills with them when it
writes the 0600 environment file (``secret_env``: variable -> ``primary`` | ``all``) and the
0600 secret files (``secret_files``). What each component supports (measured on vLLM 0.32.0,
vllm-router 0.1.17 and the vllm-ascend proxy):

- vLLM guards its API routes (/v1, /v2, /inference, /cohere; not /health or /metrics) with
  VLLM_API_KEY, one key. More keys only come as --api-key values: with a list they go into a
  0600 YAML file read with --config, so no key is in argv. Its app registers more routes that
  run inference or change state (/invocations, /scale_elastic_ep ...): the collection's ASGI
  middleware (data/k3_vllm_guard.py, --middleware) refuses every route but GET /health and
  GET /metrics without one of the keys (K3_API_KEYS).
- vllm-router checks clients only through validation URLs, which its launcher cannot set; it
  sends OPENAI_API_KEY from its environment to the engines on P/D requests and --api-key on
  the others. The collection's launcher (vllm-router-auth.py, a plan file) takes both from
  the environment and answers the validation itself on the loopback.
- The Ascend P/D proxy authenticates no client; it sends OPENAI_API_KEY to the engines. Its
  port is closed to everyone but the deployment and k3_client_networks by the firewall.

TLS (k3_tls_cert / k3_tls_key, files on the hosts): vLLM serves HTTPS with --ssl-certfile and
--ssl-keyfile. Only the vLLM API servers that clients reach directly get it; engines behind
vllm-router or the proxy stay on HTTP inside the firewalled deployment, because neither of those
speaks TLS to clients nor takes a CA for its workers: TLS in front of them is the site's (a
terminating proxy).
"""

from __future__ import annotations

import json
import os

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import DATA_DIR
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _front_door as door
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_front_door import ADMIN_VARIABLE
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import secret_keys

AUTH_VARIABLE = "k3_api_key"
ROUTER_LAUNCHER = "vllm-router-auth.py"
# The ASGI middleware that puts the key on every route of a vLLM API server (data/k3_vllm_guard.py).
VLLM_GUARD = "k3_vllm_guard"
_DATA = DATA_DIR


def _data_source(name):
    with open(os.path.join(_DATA, name), encoding="utf-8") as handle:
        return handle.read()


def router_launcher_source():
    return _data_source("vllm_router_auth.py")


def vllm_guard_source():
    return _data_source(VLLM_GUARD + ".py")


# The request limits (k3_request_max_*): the guard's names and their defaults (max_tokens: max_model_len).
LIMITS = (
    ("n", "k3_request_max_n", 16),
    ("best_of", "k3_request_max_best_of", 16),
    ("max_tokens", "k3_request_max_tokens", None),
)


def _guard_vllm(svc, config_dir, accepted):
    """Every route of the API server behind the key (vLLM's own check covers /v1, /v2, /inference, /cohere)."""
    svc["secret_env"]["K3_API_KEYS"] = accepted
    svc["argv"] += ["--middleware", VLLM_GUARD + ".KeyGuard"]
    path = svc["env"].get("PYTHONPATH")
    svc["env"]["PYTHONPATH"] = config_dir + (":" + path if path else "")
    svc.setdefault("files", []).append(
        {"path": "%s/%s.py" % (config_dir, VLLM_GUARD), "mode": "0644", "content": vllm_guard_source()}
    )
    _mount(svc, config_dir)


class AuthMixin:
    """Reads k3_api_key (its shape, never its value into the plan) and wires services to it."""

    def read_auth(self, hosts):
        """How many keys the deployment has (0: no authentication)."""
        counts = {}
        values = {}
        for host in hosts:
            if (host, AUTH_VARIABLE) in self.reported:
                return 0
            value = self.hv(host, AUTH_VARIABLE)
            keys = secret_keys(value)
            counts[host] = len(keys)
            values.setdefault(tuple(keys), []).append(host)
        if len(values) > 1:
            self.problem(
                "all",
                AUTH_VARIABLE,
                "the hosts of one deployment have different keys (%d different values)" % len(values),
                "set %s once, in all.vars (or the vault file every host reads)" % AUTH_VARIABLE,
            )
            return 0
        return next(iter(counts.values()), 0)

    def apply_auth(self, keys, admin, rendered, params, sealed):
        """Give each rendered service the keys it needs; returns the plan's ``auth`` entry.

        ``sealed``: a front door stands before the endpoint. Behind it every service takes only the
        deployment's own key (``primary``: k3_admin_api_key); without one, the endpoint takes every key.
        """
        entry = {
            "api_key": bool(keys or admin),
            "keys": keys,
            "variable": AUTH_VARIABLE,
            "admin_key": bool(admin),
            "admin_variable": ADMIN_VARIABLE,
        }
        if not (keys or admin):
            return entry
        accepted = "primary" if sealed else "all"
        config_dir = params.get("config_dir") or "/etc/kimi-k3"
        for _host, svc in rendered:
            kind = svc["kind"]
            if kind == "vllm":
                svc["secret_env"] = {"VLLM_API_KEY": "primary"}
                if not sealed and keys + int(bool(admin)) > 1 and svc["serves_http"]:
                    path = "%s/%s.api-keys.yaml" % (config_dir, svc["name"])
                    svc["secret_files"] = [{"path": path, "format": "vllm_config_api_keys"}]
                    svc["argv"] += ["--config", path]
                    _mount(svc, config_dir)
                if svc["serves_http"]:
                    _guard_vllm(svc, config_dir, accepted)
            elif kind == "router":
                svc["secret_env"] = {"OPENAI_API_KEY": "primary", "K3_API_KEYS": accepted}
                launcher = "%s/%s" % (config_dir, ROUTER_LAUNCHER)
                if svc["argv"] and os.path.basename(svc["argv"][0]) == "vllm-router":
                    svc["argv"] = ["python3", launcher] + svc["argv"][1:]
                svc.setdefault("files", []).append(
                    {"path": launcher, "mode": "0644", "content": router_launcher_source()}
                )
                _mount(svc, config_dir)
            elif kind == "proxy":
                svc["secret_env"] = {"OPENAI_API_KEY": "primary"}
        return entry

    def apply_limits(self, hosts, rendered, params):
        """The request limits on every vLLM API server the guard middleware stands before (a deployment
        with keys); the plan's ``limits``. Without keys the engines run the recipe's command as it is."""
        limits = {}
        for name, variable, default in LIMITS:
            value = self.deployment_value(hosts, variable, default)
            if value is None and name == "max_tokens":
                value = params.get("max_model_len")
            if value is not None:
                limits[name] = int(value)
        text = json.dumps(limits, sort_keys=True)
        guarded = [svc for _host, svc in rendered if VLLM_GUARD + ".KeyGuard" in svc["argv"]]
        for svc in guarded:
            svc["env"] = dict(svc["env"], K3_REQUEST_LIMITS=text)
        return limits if guarded else {}

    @staticmethod
    def apply_plain_ids(rendered):
        """The decode engines the guard stands before answer with plain ids: vllm-router's P/D request
        id carries the prefill and decode workers' addresses, which vLLM puts into every answer."""
        for _host, svc in rendered:
            if svc.get("role") == "decode" and VLLM_GUARD + ".KeyGuard" in svc["argv"]:
                svc["env"] = dict(svc["env"], K3_PLAIN_REQUEST_IDS="1")

    def read_tls(self, hosts):
        """(cert, key, ca) of the deployment; problems for half a pair or hosts that differ."""
        found = {}
        for name in ("k3_tls_cert", "k3_tls_key", "k3_tls_ca"):
            values = {self.hv(h, name) for h in hosts if (h, name) not in self.reported}
            if len(values) > 1:
                self.problem(
                    "all", name, "the hosts of one deployment give different files", "set %s once, in all.vars" % name
                )
            found[name] = next(iter(values), None) if len(values) == 1 else None
        cert, key, ca = found["k3_tls_cert"], found["k3_tls_key"], found["k3_tls_ca"]
        if bool(cert) != bool(key):
            missing = "k3_tls_key" if cert else "k3_tls_cert"
            self.problem(
                hosts[0] if hosts else "all",
                missing,
                "TLS needs a certificate and its key; %s is not set" % missing,
                "set both k3_tls_cert and k3_tls_key (PEM files on the hosts), or neither",
            )
            return None, None, ca
        return cert, key, ca

    def apply_tls(self, tls, rendered):
        """HTTPS for the vLLM API servers no router or proxy stands in front of; the plan's ``tls`` entry."""
        cert, key, ca = tls
        if not cert:
            return {"enabled": False, "ca": ca, "services": []}
        behind = set()
        for _host, svc in rendered:
            if svc["kind"] in ("router", "proxy"):
                behind.update(svc["after"])
        served = []
        for host, svc in rendered:
            ref = "%s/%s" % (host, svc["name"])
            if svc["kind"] != "vllm" or not svc["serves_http"] or ref in behind:
                continue
            svc["argv"] += ["--ssl-certfile", cert, "--ssl-keyfile", key]
            for folder in sorted({os.path.dirname(cert), os.path.dirname(key)}):
                _mount(svc, folder)
            if svc.get("url"):
                svc["url"] = "https://" + svc["url"].split("://", 1)[1]
            if svc.get("health") and svc["health"].get("url", "").startswith("http://"):
                svc["health"]["url"] = "https://" + svc["health"]["url"].split("://", 1)[1]
            served.append(ref)
        return {"enabled": bool(served), "ca": ca, "services": served}


def _mount(svc, folder):
    """A containerised service sees the configuration folder (read only)."""
    if svc["runtime"] != "docker":
        return
    container = svc.setdefault("container", {}) or {}
    volumes = list(container.get("volumes") or [])
    if not any(str(v).split(":", maxsplit=1)[0] == folder for v in volumes):
        volumes.append("%s:%s:ro" % (folder, folder))
    container["volumes"] = volumes
    svc["container"] = container


# ---------------------------------------------------------------------- on the hosts (roles)
def _selected(value, admin):
    """(every key, the deployment's own key): k3_api_key's keys and k3_admin_api_key."""
    keys = secret_keys(value)
    admin_keys = secret_keys(admin)
    every = keys + [k for k in admin_keys if k not in keys]
    return every, (admin_keys or keys or [None])[0]


def resolve_secret_env(spec, value, admin=None):
    """``secret_env`` of a planned service with the keys filled in (for the 0600 environment file).

    ``primary``: the deployment's own key (k3_admin_api_key, else the first of k3_api_key);
    ``all``: every key of k3_api_key and the admin key, comma-separated.
    """
    if not spec:
        return {}
    every, own = _selected(value, admin)
    if not every:
        raise ValueError(
            "the plan wants API keys (secret_env) but k3_api_key and k3_admin_api_key are not set: set them, or re-plan"
        )
    return {name: ",".join(every) if which == "all" else own for name, which in spec.items()}


def secret_file_content(spec, value, admin=None):
    """The text of one ``secret_files`` entry of a planned service."""
    every, _own = _selected(value, admin)
    if not every:
        raise ValueError(
            "the plan wants API keys (secret_files) but k3_api_key and k3_admin_api_key are not set: set them, "
            "or re-plan"
        )
    if spec.get("format") == door.KEYS_FORMAT:
        return door.keys_file(secret_keys(value), (secret_keys(admin) or [None])[0])
    if spec.get("format") != "vllm_config_api_keys":
        raise ValueError("unknown secret file format %r" % spec.get("format"))
    # JSON strings are YAML; vLLM's --config turns the list into --api-key k1 k2 ...
    return "api-key: [%s]\n" % ", ".join('"%s"' % k for k in every)
