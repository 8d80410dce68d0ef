# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The variable contract: every k3_* variable the collection reads, and the check of a value.

Declarations live in ``data/variables.yml`` (host variables, profile parameters, playbook
variables, internal facts) and, for the prerequisite roles' knobs, in the roles'
``meta/argument_specs.yml``: a role default that reads ``k3_<name>`` names the option whose
type, choices and description declare it. Plain Python, no Ansible imports.
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import math
import os
import re

import yaml

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import COLLECTION_ROOT

SCOPES = ("deployment", "group", "host")
# RFC 6750's b64token: what a key sent as "Authorization: Bearer <key>" may be made of.
_BEARER_TOKEN = re.compile(r"^[A-Za-z0-9._~+/-]+=*$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]i?[bB]?|[bB])?\s*$")
_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_K3_REF = re.compile(r"\bk3_[a-z0-9_]+")
# argument_specs types -> contract types
_SPEC_TYPES = {"bool": "bool", "int": "int", "str": "str", "path": "path", "list": "list", "dict": "mapping"}


def collection_root():
    return COLLECTION_ROOT


class Declaration:
    """One declared variable."""

    def __init__(self, name, spec, section, source):
        self.name = name
        self.spec = dict(spec or {})
        self.section = section  # host, parameters, playbook, internal, role
        self.source = source  # where it is declared
        self.type = self.spec.get("type", "any")
        self.scope = self.spec.get("scope", "host")
        self.description = self.spec.get("description", "")

    def __repr__(self):
        return "Declaration(%s, %s, %s)" % (self.name, self.type, self.section)


class Contract:
    """Every declared k3_* variable, by name."""

    def __init__(self, declarations):
        self.by_name = {d.name: d for d in declarations}

    def get(self, name):
        return self.by_name.get(name)

    def names(self):
        return sorted(self.by_name)

    def section(self, section):
        return [d for d in self.by_name.values() if d.section == section]

    def parameter(self, pname):
        return self.by_name.get("k3_" + pname)

    def closest(self, name, candidates=None):
        pool = list(candidates) if candidates is not None else self.names()
        found = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
        return found[0] if found else None


def _read_yaml(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def role_knobs(root=None):
    """Declarations of the k3_* knobs the roles read, from their defaults and argument specs."""
    root = root or collection_root()
    roles_dir = os.path.join(root, "roles")
    out = []
    if not os.path.isdir(roles_dir):
        return out
    for role in sorted(os.listdir(roles_dir)):
        defaults_path = os.path.join(roles_dir, role, "defaults", "main.yml")
        specs_path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if not (os.path.isfile(defaults_path) and os.path.isfile(specs_path)):
            continue
        defaults = _read_yaml(defaults_path)
        specs = _read_yaml(specs_path).get("argument_specs") or {}
        options = {}
        for entry in specs.values():
            for opt, ospec in ((entry or {}).get("options") or {}).items():
                options.setdefault(opt, ospec or {})
        for option, value in defaults.items():
            if not isinstance(value, str):
                continue
            for ref in _K3_REF.findall(value):
                if ref in ("k3_plan_result", "k3_plan") or option not in options:
                    continue
                ospec = options[option]
                spec = {
                    "type": _SPEC_TYPES.get(ospec.get("type", "raw"), "any"),
                    "scope": "host",
                    "description": _first_line(ospec.get("description")),
                    "role": role,
                    "option": option,
                }
                if ospec.get("choices"):
                    spec["choices"] = list(ospec["choices"])
                out.append(Declaration(ref, spec, "role", "roles/%s/meta/argument_specs.yml (%s)" % (role, option)))
    return out


def _first_line(description):
    if isinstance(description, list):
        description = description[0] if description else ""
    return str(description or "").strip().split("\n", maxsplit=1)[0]


@functools.lru_cache(maxsize=4)
def load_contract(root=None):
    root = root or collection_root()
    data = _read_yaml(os.path.join(root, "plugins", "plugin_utils", "data", "variables.yml"))
    declarations = []
    source = "plugins/plugin_utils/data/variables.yml"
    for name, spec in (data.get("host") or {}).items():
        declarations.append(Declaration(name, spec, "host", source))
    for pname, spec in (data.get("parameters") or {}).items():
        declarations.append(Declaration("k3_" + pname, spec, "parameters", source))
    for name, spec in (data.get("playbook") or {}).items():
        declarations.append(Declaration(name, spec, "playbook", source))
    for name, spec in (data.get("internal") or {}).items():
        declarations.append(Declaration(name, spec, "internal", source))
    seen = {d.name for d in declarations}
    for decl in role_knobs(root):
        if decl.name not in seen:
            declarations.append(decl)
            seen.add(decl.name)
    return Contract(declarations)


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------
class Invalid(Exception):
    """A value that does not match its declaration; the message says what is expected."""

    def __init__(self, message, expected):
        super().__init__(message)
        self.message = message
        self.expected = expected


def _describe(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_int(value, what):
    if isinstance(value, bool):
        raise Invalid("%s is not a whole number" % _describe(value), what)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise Invalid("%s is not a whole number" % _describe(value), what)


def _as_bool(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no", "off", "0"):
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise Invalid("%s is not true or false" % _describe(value), "true or false")


def _bounds(spec):
    lo, hi = spec.get("min"), spec.get("max")
    if lo is not None and hi is not None:
        return "from %s to %s" % (lo, hi)
    if lo is not None:
        return "%s or more" % lo
    if hi is not None:
        return "at most %s" % hi
    return ""


def check_value(decl, value):
    """Return the value as the planner uses it, or raise :class:`Invalid`."""
    if value is None:
        if decl.spec.get("nullable") or decl.type == "any":
            return None
        raise Invalid("is empty (null)", _expected(decl))
    check = _CHECKS.get(decl.type)
    if check is None:
        raise Invalid("has an undeclared type %r" % decl.type, "a value of a declared type")
    return check(decl, value)


def _check_int(decl, value):
    spec = decl.spec
    what = "a whole number" + (" " + _bounds(spec) if _bounds(spec) else "")
    number = _as_int(value, what)
    if spec.get("min") is not None and number < spec["min"] or spec.get("max") is not None and number > spec["max"]:
        raise Invalid("%d is out of range" % number, what)
    return number


def _check_port(_decl, value):
    number = _as_int(value, "a port from 1 to 65535")
    if not 1 <= number <= 65535:
        raise Invalid("port %d is out of range" % number, "a port from 1 to 65535")
    return number


def _check_number(decl, value):
    spec = decl.spec
    what = "a number" + (" " + _bounds(spec) if _bounds(spec) else "")
    if isinstance(value, bool):
        raise Invalid("%s is not a number" % _describe(value), what)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise Invalid("%s is not a number" % _describe(value), what) from None
    if math.isnan(number) or spec.get("min") is not None and number < spec["min"]:
        raise Invalid("%s is out of range" % _describe(value), what)
    if spec.get("max") is not None and number > spec["max"]:
        raise Invalid("%s is out of range" % _describe(value), what)
    return value


def _check_interface(_decl, value):
    if not isinstance(value, str) or not _IFNAME.match(value):
        raise Invalid("%s is not an interface name" % _describe(value), "an interface name such as eth0 or enp1s0")
    return value


def _check_list(_decl, value):
    if not isinstance(value, list):
        raise Invalid("%s is not a list" % _describe(value), "a list")
    return value


def _expected(decl):
    spec = decl.spec
    kind = decl.type
    if spec.get("choices"):
        return "one of %s" % ", ".join(str(c) for c in spec["choices"])
    return {
        "int": "a whole number" + (" " + _bounds(spec) if _bounds(spec) else ""),
        "port": "a port from 1 to 65535",
        "number": "a number" + (" " + _bounds(spec) if _bounds(spec) else ""),
        "bool": "true or false",
        "str": "a text",
        "path": "an absolute path" if spec.get("absolute") else "a path",
        "size": "a size such as 64M, 256g or 1GB (or bytes)",
        "ip": "an IP address",
        "interface": "an interface name such as eth0",
        "str_list": "a non-empty list"
        + (" (or a comma-separated text)" if spec.get("comma") else "")
        + (" of paths such as /v1/chat/completions" if spec.get("pattern") else ""),
        "int_list": "a non-empty list of whole numbers",
        "list": "a list",
        "mapping": "a mapping" + (" with keys %s" % ", ".join(spec["keys"]) if spec.get("keys") else ""),
        "env": "a mapping of NAME: value",
        "args": "a list of --flag or {--flag: value}",
        "secret": _SECRET_EXPECTED,
        "networks": "a list of addresses or networks, e.g. [10.1.0.0/16, 192.0.2.7]",
    }.get(kind, "a value")


_SECRET_EXPECTED = "a key (a text without spaces or commas) or a list of such keys, e.g. from Ansible Vault"


def check_networks(value):
    """A list of addresses or networks (type ``networks``); raises Invalid naming the bad item."""
    expected = "a list of addresses or networks, e.g. [10.1.0.0/16, 192.0.2.7]"
    if not isinstance(value, list):
        raise Invalid("%s is not a list" % _describe(value), expected)
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str):
            raise Invalid("item %s is not an address or a network" % _describe(item), expected)
        try:
            ipaddress.ip_network(item.strip(), strict=False)
        except ValueError:
            raise Invalid("item %s is not an address or a network" % _describe(item), expected) from None
    return value


def secret_keys(value):
    """The keys of a secret value (a key or a list of keys), in order; [] when unset."""
    if not value:
        return []
    return [str(value)] if isinstance(value, str) else [str(v) for v in value]


def _check_secret(value):
    """A key or a list of keys. The messages describe the value, never show it."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        what = "an empty list" if isinstance(items, list) else "a %s" % type(value).__name__
        raise Invalid("is %s, not a key" % what, _SECRET_EXPECTED)
    for n, item in enumerate(items, 1):
        where = "" if isinstance(value, str) else "item %d " % n
        if not isinstance(item, str):
            raise Invalid("%sis a %s, not a text" % (where, type(item).__name__), _SECRET_EXPECTED)
        if not item.strip():
            raise Invalid("%sis empty" % where, _SECRET_EXPECTED)
        if any(c.isspace() or c == "," or not c.isprintable() for c in item):
            raise Invalid("%shas a space, a comma or a control character" % where, _SECRET_EXPECTED)
        if not _BEARER_TOKEN.match(item):
            raise Invalid(
                "%shas a character a bearer token cannot have (RFC 6750: letters, digits, - . _ ~ + / and = at the end)"
                % where,
                _SECRET_EXPECTED,
            )
    if len(set(items)) != len(items):
        raise Invalid("lists one key twice", _SECRET_EXPECTED)
    return value


def _check_str(decl, value):
    spec = decl.spec
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise Invalid("%s is not a text" % _describe(value), _expected(decl))
    text = str(value)
    if spec.get("choices"):
        if text not in [str(c) for c in spec["choices"]]:
            raise Invalid("%s is not one of its choices" % _describe(value), _expected(decl))
        return text
    if not text.strip():
        raise Invalid("is empty", _expected(decl))
    if spec.get("pattern") and not re.search(spec["pattern"], text):
        raise Invalid("%s is not well formed" % _describe(value), _expected(decl))
    if decl.type == "path" and spec.get("absolute") and not text.startswith("/"):
        raise Invalid("%s is not an absolute path" % _describe(value), "an absolute path")
    return value if isinstance(value, str) else text


def _check_size(value):
    what = "a size such as 64M, 256g or 1GB (or bytes)"
    if isinstance(value, bool):
        raise Invalid("%s is not a size" % _describe(value), what)
    if isinstance(value, int):
        if value < 1:
            raise Invalid("%d is not a size" % value, what)
        return value
    if isinstance(value, str) and _SIZE.match(value) and float(_SIZE.match(value).group(1)) > 0:
        return value
    raise Invalid("%s is not a size" % _describe(value), what)


def _check_ip(value):
    if not isinstance(value, str):
        raise Invalid("%s is not an IP address" % _describe(value), "an IP address")
    try:
        addr = ipaddress.ip_address(value.strip())  # 0.0.0.0 is refused where the role is known
    except ValueError:
        raise Invalid("%s is not an IP address" % _describe(value), "an IP address") from None
    return str(addr)


def _check_str_list(decl, value):
    expected = _expected(decl)
    if isinstance(value, str) and decl.spec.get("comma"):
        items = [v.strip() for v in value.split(",")]
        if not value.strip() or not all(items):
            raise Invalid("%s has an empty item" % _describe(value), expected)
        return value
    if not isinstance(value, list):
        raise Invalid("%s is not a list" % _describe(value), expected)
    if not value:
        raise Invalid("is an empty list", expected)
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (str, int)) or not str(item).strip():
            raise Invalid("item %s is not a name" % _describe(item), expected)
        if decl.spec.get("pattern") and not re.search(decl.spec["pattern"], str(item)):
            raise Invalid("item %s is not well formed" % _describe(item), expected)
    return value


def _check_int_list(value):
    expected = "a non-empty list of whole numbers"
    if not isinstance(value, list):
        raise Invalid("%s is not a list" % _describe(value), expected)
    if not value:
        raise Invalid("is an empty list", expected)
    out = []
    for item in value:
        number = _as_int(item, expected)
        if number < 1:
            raise Invalid("item %d is below 1" % number, "a non-empty list of whole numbers from 1")
        out.append(number)
    return out


def _check_mapping(decl, value):
    if not isinstance(value, dict):
        raise Invalid("%s is not a mapping" % _describe(value), _expected(decl))
    keys = decl.spec.get("keys")
    if keys:
        missing = [k for k in keys if k not in value]
        unknown = [k for k in value if k not in keys]
        if missing or unknown:
            raise Invalid(
                "has %s"
                % "; ".join(
                    part
                    for part in (
                        "no %s" % ", ".join(map(str, missing)) if missing else "",
                        "unknown keys %s" % ", ".join(map(str, unknown)) if unknown else "",
                    )
                    if part
                ),
                _expected(decl),
            )
        for key in keys:
            if not isinstance(value[key], str) or not value[key].strip():
                raise Invalid("%s is not a text" % key, _expected(decl))
    return value


def _check_env(value):
    expected = "a mapping of NAME: value (null removes a variable)"
    if not isinstance(value, dict):
        raise Invalid("%s is not a mapping" % _describe(value), expected)
    for key, item in value.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            raise Invalid("%s is not an environment variable name" % _describe(key), expected)
        if isinstance(item, (dict, list)):
            raise Invalid("%s is a %s, not a text" % (key, type(item).__name__), expected)
    return value


def _check_args_shape(value):
    expected = "a list of --flag or {--flag: value}"
    if not isinstance(value, list):
        raise Invalid("%s is not a list" % _describe(value), expected)
    for item in value:
        if isinstance(item, str):
            flag = item
        elif isinstance(item, dict) and len(item) == 1:
            flag = next(iter(item))
        else:
            raise Invalid("item %s is neither --flag nor {--flag: value}" % _describe(item), expected)
        if not isinstance(flag, str) or not flag.startswith("-"):
            raise Invalid("%s is not a flag (flags start with --)" % _describe(flag), expected)
    return value


# The check of each declared type: (declaration, value) -> the value as the planner uses it.
_CHECKS = {
    "any": lambda _decl, value: value,
    "int": _check_int,
    "port": _check_port,
    "number": _check_number,
    "bool": lambda _decl, value: _as_bool(value),
    "str": _check_str,
    "path": _check_str,
    "size": lambda _decl, value: _check_size(value),
    "ip": lambda _decl, value: _check_ip(value),
    "interface": _check_interface,
    "str_list": _check_str_list,
    "int_list": lambda _decl, value: _check_int_list(value),
    "list": _check_list,
    "mapping": _check_mapping,
    "env": lambda _decl, value: _check_env(value),
    "args": lambda _decl, value: _check_args_shape(value),
    "secret": lambda _decl, value: _check_secret(value),
    "networks": lambda _decl, value: check_networks(value),
}
