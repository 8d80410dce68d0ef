# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Every role's variables, as the inventory sets them for each host it runs on, against the role's
meta/argument_specs.yml: all of them at once, on the controller, before anything changes.

Ansible checks a role's arguments when the role starts, one host at a time: a forked worker per host
and role, and a wrong value found only when its stage comes, after the earlier stages changed the
hosts. Here the values the inventory (or -e) gives a host are checked against the spec of each role
the run will apply to that host, with the validator Ansible's own check uses; the roles' defaults
are the collection's and are not read.
"""

from __future__ import annotations

import os

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import COLLECTION_ROOT


def role_options(role, root=COLLECTION_ROOT):
    """The options of ``role``'s main entry point (its meta/argument_specs.yml); ValueError when missing."""
    path = os.path.join(root, "roles", role, "meta", "argument_specs.yml")
    try:
        with open(path, encoding="utf-8") as handle:
            specs = yaml.safe_load(handle) or {}
    except OSError as exc:
        raise ValueError("role %s: no argument spec at %s (%s)" % (role, path, exc.strerror)) from None
    return ((specs.get("argument_specs") or {}).get("main") or {}).get("options") or {}


def _named(message, options):
    """The option ``message`` is about (the longest name it mentions), or None."""
    found = [name for name in options if name in message]
    return max(found, key=len) if found else None


def _fix(role, name, options):
    """What a value of option ``name`` must be, as a sentence."""
    if not name:
        return "Fix: see roles/%s/README.md." % role
    option = options[name]
    what = option.get("type", "str")
    if option.get("elements"):
        what += " of " + option["elements"]
    if option.get("choices"):
        what += ", one of " + ", ".join(str(c) for c in option["choices"])
    return "Fix: give %s a value of type %s, in the inventory or with -e (roles/%s/README.md)." % (name, what, role)


def _shown(message, name, values, options):
    """``message`` without a secret: about a no_log option, none of its value; elsewhere, no no_log
    option's value."""
    secret = {n for n, o in options.items() if o.get("no_log")}
    if name in secret:
        return "argument '%s' does not fit its declaration (its value, a secret, is not shown)" % name
    for key in secret:
        value = values.get(key)
        if isinstance(value, str) and value:
            message = message.replace(value, "********")
    return message


def problems(role, values, options):
    """The validator's message for each problem of ``values`` (name to value) for ``role``, and what
    fixes it: ``[(message, fix)]``, [] when they fit. No secret (a no_log option's value) is shown."""
    if not values:
        return []
    result = ArgumentSpecValidator(options).validate(values, validate_role_argument_spec=True)
    out = []
    for message in result.error_messages:
        name = _named(message, options)
        out.append((_shown(message, name, values, options), _fix(role, name, options)))
    return out


def _hosts(hosts, shown=5):
    """``host a``, or ``hosts a, b, c and 7 more``."""
    if len(hosts) == 1:
        return "host " + hosts[0]
    more = " and %d more" % (len(hosts) - shown) if len(hosts) > shown else ""
    return "hosts " + ", ".join(hosts[:shown]) + more


def check(roles, read, only=None, options_of=role_options):
    """One sentence per problem, naming the hosts that have it, the role, the variable and the fix;
    ``roles`` maps a role to its hosts, ``read(host, names)`` returns the values the host has of those
    names (templated), ``only`` keeps the hosts of this run (--limit; None keeps all), and
    ``options_of(role)`` the role's options."""
    found = {}  # (role, message, fix) -> hosts, in the order first seen
    kept = None if only is None else set(only)
    for role, hosts in roles.items():
        options = options_of(role)
        for host in hosts if kept is None else [h for h in hosts if h in kept]:
            for message, fix in problems(role, read(host, list(options)), options):
                found.setdefault((role, message, fix), []).append(host)
    return [
        "%s: role %s: %s. %s" % (_hosts(sorted(h)), role, message, fix) for (role, message, fix), h in found.items()
    ]
