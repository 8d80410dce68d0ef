# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The front door in the plan: one nginx service on the endpoint's host, in front of it.

What it does is :mod:`._front_door`'s (its configuration); here: its settings from the
inventory (``k3_front_door*``), the service on the endpoint's host, and the plan's endpoint
moved to it (the old one kept as its ``backend``). ``k3_front_door: false`` plans none: the
router, proxy or node 0 is the endpoint again, as the site's own front door would need.
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _front_door as door
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import secret_keys

ADMIN_VARIABLE = "k3_admin_api_key"


class FrontDoorMixin:
    """Reads k3_front_door* and k3_admin_api_key; puts the front door into the plan."""

    def deployment_value(self, hosts, name, default=None):
        """One value of a deployment-scope variable (a problem when hosts differ)."""
        values = {}
        for host in hosts:
            if (host, name) in self.reported:
                continue
            value = self.hv(host, name, default)
            values.setdefault(repr(value), (value, []))[1].append(host)
        if len(values) > 1:
            self.problem(
                "all", name, "the hosts of one deployment give different values", "set %s once, in all.vars" % name
            )
        return next(iter(values.values()))[0] if values else default

    def read_front_door(self, hosts):
        """The front door's settings, or None (k3_front_door: false)."""
        if not self.deployment_value(hosts, "k3_front_door", True):
            return None
        settings = {k: self.deployment_value(hosts, v, door.DEFAULTS[k]) for k, v in door.VARIABLES.items()}
        settings["port"] = int(settings["port"])
        settings["program"] = door.DEFAULTS["program"]
        return settings

    def read_admin_key(self, hosts, front_door, client_keys):
        """True when k3_admin_api_key is set (one key, never shown); problems for what cannot work."""
        value = self.deployment_value(hosts, ADMIN_VARIABLE)
        if any((h, ADMIN_VARIABLE) in self.reported for h in hosts):
            return False
        keys = secret_keys(value)
        if len(keys) > 1:
            self.problem(
                "all",
                ADMIN_VARIABLE,
                "is a list of %d keys; the admin key is one key" % len(keys),
                "set %s to one key (in the vault beside k3_api_key)" % ADMIN_VARIABLE,
            )
            return False
        if keys and keys[0] in secret_keys(self.deployment_value(hosts, "k3_api_key")):
            self.problem(
                "all",
                ADMIN_VARIABLE,
                "is also one of the client keys (k3_api_key): a client could manage the deployment",
                "give %s a key of its own" % ADMIN_VARIABLE,
            )
            return False
        if front_door is not None and client_keys and not keys:
            self.problem(
                "all",
                ADMIN_VARIABLE,
                "clients have keys (k3_api_key) but the deployment has no admin key: behind the front door "
                "the router, the proxy and the engines take only the admin key",
                "set %s to a key of its own in the vault beside k3_api_key (e.g. ansible-vault edit)" % ADMIN_VARIABLE,
            )
        return bool(keys)

    def add_front_door(self, settings, rendered, plan_hosts, endpoint, tls, config_dir):
        """The front door service on the endpoint's host (before the port checks); the new endpoint."""
        backend_svc = next((s for h, s in rendered if h == endpoint["host"] and s["name"] == endpoint["service"]), None)
        host = endpoint["host"]
        ip = plan_hosts[host]["ip"]
        scheme = "https" if tls[0] else "http"
        files = door.paths(config_dir)
        url = "%s://%s:%d" % (scheme, ip, settings["port"])
        service = {
            "name": door.SERVICE,
            "kind": door.KIND,
            "role": door.KIND,
            "argv": [settings["program"], "-c", files["config"], "-e", "stderr"],
            "env": {},
            "image": None,
            "runtime": "host",
            "ports": [{"name": scheme, "port": settings["port"], "count": 1}],
            "after": ["%s/%s" % (host, endpoint["service"])],
            "after_started": [],
            "unit": "k3-%s" % door.SERVICE,
            "ranks": {},
            "serves_http": True,
            "url": url,
            "health": {"url": url + "/health"},
            "container": {},
            "backend": {
                "service": endpoint["service"],
                "kind": backend_svc["kind"] if backend_svc else "vllm",
                "ip": ip,
                "port": endpoint["port"],
            },
        }
        self.port_sources[(host, door.SERVICE, scheme)] = ["k3_front_door_port"]
        rendered.append((host, service))
        plan_hosts[host]["services"].append(service)
        return {"service": door.SERVICE, "host": host, "url": url, "port": settings["port"], "backend": endpoint}

    def configure_front_door(self, settings, rendered, auth, tls, config_dir, params):
        """The front door's configuration file and, with keys, its 0600 keys file; the plan's ``tls``."""
        hidden = door.hidden_texts(params)
        served = []
        for host, svc in rendered:
            if svc["kind"] != door.KIND:
                continue
            files = door.paths(config_dir)
            text = door.nginx_config(
                settings,
                svc["backend"],
                {"cert": tls[0], "key": tls[1]},
                auth["api_key"],
                config_dir,
                self.profile["name"],
                hidden=hidden,
            )
            if tls[0]:
                served.append("%s/%s" % (host, svc["name"]))
            svc["files"] = [{"path": files["config"], "mode": "0644", "content": text}]
            if auth["api_key"]:
                svc["secret_files"] = [{"path": files["keys"], "format": door.KEYS_FORMAT}]
        return {"enabled": bool(served), "ca": tls[2], "services": served}
