# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The plan's monitoring: the hosts of the inventory's ``monitoring`` group and what they scrape.

With a monitoring host in the inventory:

- each vllm-router that names no ``--prometheus-host`` gets one: its own address (vllm-router's
  default, 127.0.0.1, is out of another host's reach), with ``--prometheus-port`` (default 29000);
  its listener becomes a planned port (``metrics``), so the firewall guards it like the others;
- the monitoring hosts are admitted to every planned port by the firewall (plan ``monitoring.hosts``);
- every host gets the node exporter and every accelerator host its platform's exporter, as
  services of kind ``exporter`` (plugin_utils/observability/_exporters.py; ``k3_exporters: false``
  plans none);
- ``monitoring.targets`` lists every metrics endpoint (plugin_utils/observability/_monitoring.py).

Without one, nothing of the plan changes but an empty ``monitoring`` section.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _exporters as exporters
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring as monitoring
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _profiles as profiles
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_inputs import MONITORING_GROUP


class MonitoringMixin:
    def monitoring_hosts(self):
        """[{"host", "ip"}] of the monitoring group (an address each; a refused one is a problem)."""
        out = []
        for host in self.groups.get(MONITORING_GROUP, []):
            source = self.hv(host, "k3_ip") or self.hv(host, "ansible_host") or host
            try:
                address = ipaddress.ip_address(str(source).strip())
            except ValueError:
                self.problem(
                    host,
                    "k3_ip",
                    "monitoring host %s has no IP address (k3_ip is not set and %r is not one): the firewall "
                    "admits monitoring hosts by address" % (host, str(source)),
                    "set k3_ip (or ansible_host) of %s to the address it scrapes from" % host,
                )
                continue
            if address.is_unspecified or address.is_loopback:
                self.problem(
                    host,
                    "k3_ip",
                    "monitoring host %s has the address %s, from which it cannot scrape another host" % (host, address),
                    "set k3_ip of %s to the address the deployment's hosts see it connect from" % host,
                )
                continue
            out.append({"host": host, "ip": str(address)})
        return out

    def expose_router_metrics(self, rendered, plan_hosts):
        """Give each vllm-router a Prometheus listener on its host's address (and plan the port)."""
        for host, service in rendered:
            if service["kind"] != "router" or not service.get("argv") or "vllm-router" not in service["argv"][0]:
                continue
            flags = profiles.argv_flags(service["argv"])
            port = flags.get(profiles.flag_key("--prometheus-port"))
            if profiles.flag_key("--prometheus-host") not in flags:
                service["argv"] += ["--prometheus-host", plan_hosts[host]["ip"]]
                if port is None:
                    port = str(monitoring.ROUTER_DEFAULT_PORT)
                    service["argv"] += ["--prometheus-port", port]
            bind = profiles.argv_flags(service["argv"])[profiles.flag_key("--prometheus-host")]
            if bind in monitoring.LOOPBACK:
                continue  # kept on the loopback on purpose (k3_router_args): monitoring names it
            port = int(port or monitoring.ROUTER_DEFAULT_PORT)
            if not any(p["port"] == port for p in service.get("ports") or []):
                service.setdefault("ports", []).append({"name": "metrics", "port": port, "count": 1})

    def add_exporters(self, hosts, rendered, plan_hosts, config_dir):
        """The node exporter on every host, the platform's exporter on every accelerator host."""
        if not self.deployment_value(hosts, "k3_exporters", True):
            return
        node_port = int(self.deployment_value(hosts, "k3_node_exporter_port", exporters.NODE_PORT))
        settings = {
            "port": self.deployment_value(hosts, "k3_accelerator_exporter_port"),
            "image": self.deployment_value(hosts, "k3_accelerator_exporter_image"),
            "command": self.deployment_value(hosts, "k3_accelerator_exporter_command"),
        }
        platform = self.profile.get("platform")
        vendor = platform in exporters.ACCELERATORS or bool(settings["command"])
        engines = {h for h, svc in rendered if svc["kind"] == "vllm"}
        for host in hosts:
            if host not in plan_hosts:
                continue
            ip = plan_hosts[host]["ip"]
            planned = [exporters.node_exporter(ip, node_port)]
            self.port_sources[(host, exporters.NODE, "metrics")] = ["k3_node_exporter_port"]
            if host in engines and vendor:
                runtime = "host" if self.hv(host, "k3_runtime") == "host" else "docker"
                service = exporters.accelerator_exporter(platform, ip, settings, config_dir, runtime)
                self.port_sources[(host, service["name"], "metrics")] = ["k3_accelerator_exporter_port"]
                planned.append(service)
            for service in planned:
                rendered.append((host, service))
                plan_hosts[host]["services"].append(service)

    def monitoring_section(self, plan, hosts):
        """plan["monitoring"]: the monitoring hosts and every target, with what cannot be scraped."""
        targets = monitoring.scrape_targets(plan) if hosts else []
        return {"hosts": hosts, "targets": targets, "unreachable": monitoring.unreachable_targets(targets)}
