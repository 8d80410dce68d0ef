# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The planner's front door: the inventory's shape, the profile choice and every k3_* variable.

Whatever the inventory holds (None, a text where a list belongs, a mapping where a number
belongs, a missing group, an empty file), the result is problem lines, never an exception.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _cli_flags as cli_flags
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._profiles import (
    ProfileError,
    list_profiles,
    load_profile,
    variant_names,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import Invalid, check_value

ROLE_GROUPS = ("router", "metaservice", "prefill", "decode", "engine")
# The hosts whose Prometheus scrapes the deployment (roles/monitoring); they run no service of the plan.
MONITORING_GROUP = "monitoring"
# Host facts the planner reads besides the k3_* variables.
FACT_VARIABLES = ("ansible_host", "ansible_memtotal_mb")


_NEAREST = re.compile(r"(?:abbreviation of|nearest:|prefix of) (--[A-Za-z0-9][\w-]*)")


def _flag_fix(message, key):
    found = _NEAREST.search(message)
    if found:
        return "write %s in %s (or remove the flag)" % (found.group(1), key)
    return "remove the flag from %s, or spell it as the program does (see its --help)" % key


class InputsMixin:
    """Inventory normalisation, profile selection and the variable contract."""

    def read_inventory(self, inventory):
        """Groups as lists of host names and host variables as mappings, whatever came in."""
        self.groups = {}
        self.hostvars = {}
        if not isinstance(inventory, dict):
            self.problem(
                "all",
                "inventory",
                "the inventory is %s, not groups and host variables" % type(inventory).__name__,
                "give the inventory the groups %s with hosts in them" % ", ".join(ROLE_GROUPS),
            )
            return
        groups = inventory.get("groups") or {}
        hostvars = inventory.get("hostvars") or {}
        if not isinstance(groups, dict):
            self.problem("all", "groups", "the groups are not a mapping", "define the groups as YAML mappings")
            groups = {}
        if not isinstance(hostvars, dict):
            self.problem("all", "hostvars", "the host variables are not a mapping", "define host variables as YAML")
            hostvars = {}
        for name, members in groups.items():
            if members is None:
                members = []
            if isinstance(members, (str, int)):
                members = [members]
            if not isinstance(members, (list, tuple)):
                self.problem(
                    "all",
                    "groups.%s" % name,
                    "the group's hosts are a %s, not a list" % type(members).__name__,
                    "list the hosts of group %s" % name,
                )
                members = []
            self.groups[str(name)] = [str(h) for h in members if isinstance(h, (str, int))]
        for host, data in hostvars.items():
            if data is None:
                data = {}
            if not isinstance(data, dict):
                self.problem(
                    str(host),
                    "hostvars",
                    "the host's variables are a %s, not a mapping" % type(data).__name__,
                    "write the variables of %s as name: value" % host,
                )
                data = {}
            self.hostvars[str(host)] = {str(k): v for k, v in data.items()}

    # ------------------------------------------------------------------ profile
    def select_profile(self, hosts):
        known = list_profiles(self.profile_dir)
        if not hosts:
            self.problem(
                "all",
                "groups",
                "the inventory has no host in any of the groups %s" % ", ".join(ROLE_GROUPS),
                "put the hosts into the groups their role needs (see the profile's example inventory)",
            )
            return None
        names = {}
        for host in hosts:
            name = self.hv(host, "k3_profile")
            key = name if isinstance(name, str) or name is None else repr(name)
            names.setdefault(key, []).append(host)
        if len(names) > 1:
            detail = "; ".join("%s on %s" % (n, ", ".join(h)) for n, h in names.items())
            self.problem(
                "all",
                "k3_profile",
                "hosts of one deployment select different profiles (%s)" % detail,
                "set k3_profile once, in all.vars",
            )
            return None
        name = next(iter(names))
        if not name:
            self.problem(
                hosts[0], "k3_profile", "no profile selected", "set k3_profile to one of: %s" % ", ".join(known)
            )
            return None
        if name not in known:
            close = self.contract.closest(name, known)
            self.problem(
                hosts[0],
                "k3_profile",
                "unknown profile %r%s" % (name, " (did you mean %s?)" % close if close else ""),
                "use one of: %s" % ", ".join(known),
            )
            return None
        try:
            return load_profile(name, self.profile_dir)
        except ProfileError as exc:
            self.problem(hosts[0], "k3_profile", str(exc), "repair the profile data file")
            return None

    def select_variant(self, hosts):
        """The variant k3_variant selects (None: the profile as it stands); a refused one is a problem.

        Runs after check_variables: a value of the wrong type was refused there and removed, so
        what is left is a text or null.
        """
        profile = self.profile
        known = variant_names(profile)
        values = {}
        for host in hosts:
            value = self.hv(host, "k3_variant")
            values.setdefault(value if value is None or isinstance(value, str) else repr(value), []).append(host)
        if len(values) > 1:
            detail = "; ".join("%s on %s" % ("(unset)" if v is None else v, ", ".join(h)) for v, h in values.items())
            self.problem(
                hosts[0],
                "k3_variant",
                "must be the same on every host of the deployment, got %s" % detail,
                "set k3_variant once, in all.vars",
            )
            return None
        name = next(iter(values))
        if name is None:
            return None
        if not known:
            owners = self.variant_owners()
            for host in values[name]:
                self.problem(
                    host,
                    "k3_variant",
                    "profile %s has no variants (k3_variant is %r)" % (profile["name"], name),
                    "remove k3_variant%s"
                    % ("; the profiles with variants are: %s" % ", ".join(owners) if owners else ""),
                )
            return None
        if name not in known:
            close = self.contract.closest(name, known)
            for host in values[name]:
                self.problem(
                    host,
                    "k3_variant",
                    "profile %s has no variant %r%s"
                    % (profile["name"], name, " (did you mean %s?)" % close if close else ""),
                    "set k3_variant to one of the variants of %s: %s (or leave it unset for the profile as it "
                    "stands)" % (profile["name"], ", ".join(known)),
                )
            return None
        return name

    def variant_owners(self):
        """The profiles that have variants, with them: ``["ascend-a3-mixed (performance, toolcall)"]``."""
        owners = []
        for profile in list_profiles(self.profile_dir):
            try:
                names = variant_names(load_profile(profile, self.profile_dir))
            except ProfileError:
                continue
            if names:
                owners.append("%s (%s)" % (profile, ", ".join(names)))
        return owners

    # ------------------------------------------------------------------ the variable contract
    def profile_parameters(self, services_spec):
        """k3_<name> -> where the profile declares it (deployment, or the service's group)."""
        out = {"k3_" + k: "deployment" for k in (self.profile.get("parameters") or {})}
        for spec in services_spec.values():
            for k in spec.get("parameters") or {}:
                out.setdefault("k3_" + k, "group")
        return out

    def parameter_owners(self, name):
        """The profiles that declare parameter ``name`` (k3_<name>)."""
        owners = []
        for profile in list_profiles(self.profile_dir):
            try:
                data = load_profile(profile, self.profile_dir)
            except ProfileError:
                continue
            declared = set(data.get("parameters") or {})
            for spec in (data.get("services") or {}).values():
                declared.update((spec or {}).get("parameters") or {})
            if name[3:] in declared:
                owners.append(profile)
        return owners

    def check_variables(self, hosts, services_spec):
        """Every k3_* variable declared, read by this profile, and of its declared type."""
        contract = self.contract
        params = self.profile_parameters(services_spec)
        here = set(params)
        for decl in contract.by_name.values():
            if decl.section != "parameters":
                here.add(decl.name)
        for host in hosts:
            data = self.hostvars.get(host, {})
            self.check_facts(host, data)
            for key in sorted(data):
                if not key.startswith("k3_"):
                    continue
                decl = contract.get(key)
                if decl is None:
                    close = contract.closest(key, sorted(here))
                    self.problem(
                        host,
                        key,
                        "no such variable%s" % (" (did you mean %s?)" % close if close else ""),
                        "rename it to %s" % close
                        if close
                        else "remove it (see the variable reference, docs/variables.md)",
                    )
                    continue
                if key not in here:
                    owners = self.parameter_owners(key)
                    self.problem(
                        host,
                        key,
                        "profile %s has no setting %s%s"
                        % (self.profile["name"], key, " (it is a setting of %s)" % ", ".join(owners) if owners else ""),
                        "remove %s; the settings of %s are: %s"
                        % (key, self.profile["name"], ", ".join(sorted(params))),
                    )
                    continue
                self.check_one(host, key, decl, data[key])

    def check_facts(self, host, data):
        """The two Ansible variables the planner reads: ansible_host and the gathered memory."""
        if "ansible_host" in data and not isinstance(data["ansible_host"], (str, int)):
            self.problem(
                host,
                "ansible_host",
                "%r is not a host name or an address" % (data.pop("ansible_host"),),
                "set ansible_host to the address Ansible connects to (and k3_ip if other nodes use another)",
            )
        if "ansible_memtotal_mb" in data:
            memory = data["ansible_memtotal_mb"]
            if isinstance(memory, str) and memory.strip().isdigit():
                memory = int(memory)
            if isinstance(memory, bool) or not isinstance(memory, int) or memory < 1:
                data.pop("ansible_memtotal_mb")
                self.problem(
                    host,
                    "ansible_memtotal_mb",
                    "%r is not a memory size in MB" % (memory,),
                    "gather facts again, or set k3_host_memory_bytes on %s" % host,
                )
            else:
                data["ansible_memtotal_mb"] = memory

    def check_one(self, host, key, decl, value):
        data = self.hostvars[host]
        try:
            data[key] = check_value(decl, value)
        except Invalid as exc:
            # Reported here; the planner goes on as if it were unset (the profile's default), so
            # every other problem is reported too, and none twice.
            self.problem(host, key, exc.message, "set %s to %s" % (key, exc.expected))
            self.reported.add((host, key))
            del data[key]
            return
        if decl.type == "args":
            for message in cli_flags.check_args(decl.spec.get("program"), value, key):
                message = message[len(key) + 2 :] if message.startswith(key + ": ") else message
                self.problem(host, key, message, _flag_fix(message, key))

    # ------------------------------------------------------------------ addresses
    def check_addresses(self, hosts):
        """k3_ip (or ansible_host) is an address; no two hosts share one."""
        owners = {}
        for host in hosts:
            explicit = self.hv(host, "k3_ip")
            if explicit:
                address = explicit  # checked against the contract already
            else:
                source = self.hv(host, "ansible_host") or host
                try:
                    address = str(ipaddress.ip_address(str(source).strip()))
                except ValueError:
                    where = (
                        "ansible_host is %r" % source if self.hv(host, "ansible_host") else "the host name %r" % host
                    )
                    self.problem(
                        host,
                        "k3_ip",
                        "k3_ip is not set and %s, which is not an IP address (other nodes are given addresses, "
                        "not names)" % where,
                        "set k3_ip to the address other nodes use to reach %s" % host,
                    )
                    continue
                if ipaddress.ip_address(address).is_unspecified:
                    continue  # refused by host_address, naming the variable
            owners.setdefault(address, []).append(host)
        for address, names in owners.items():
            if len(names) > 1:
                self.problem(
                    names[1],
                    "k3_ip",
                    "%s has the address %s, as %s does" % (names[1], address, ", ".join(names[:1])),
                    "give every host its own address (k3_ip), or put one host into every group it serves",
                )
