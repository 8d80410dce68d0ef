# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Profile data: loading, inheritance, argument lists and templating.

A profile is a YAML file in ``profiles/``. Files whose name starts with ``_``
are fragments that profiles ``extends``; the others are selectable by name.
A profile's ``variants`` (chosen with ``k3_variant``) are other defaults for
some of its parameters; they belong to the file that declares them (a profile
that extends it does not inherit them), and may name only its parameters.

Argument lists (``args``) are lists whose items are either a bare flag
(``--trust-remote-code``) or a one-key mapping ``{--flag: value}``. Merging two
lists keeps the first position of a flag and its last value (the command
builder's "later overrides win"); ``--no-X`` and ``--X`` are the same flag, and
so are ``--a_b`` and ``--a-b``. A value of ``null`` or ``false`` removes the flag,
``true`` makes it bare. Values render as:

* a mapping: compact JSON in one argument;
* ``{$json: [...]}``: compact JSON of a list;
* a list: one argument per item after the flag (``nargs``);
* ``{$repeat: [...]}``: the flag repeated once per item;
* anything else: its string.

Strings are Jinja templates over the planner's context; a string that is
exactly one ``{{ expression }}`` keeps the expression's native type.
"""

from __future__ import annotations

import copy
import json
import os

import yaml
from jinja2 import StrictUndefined, Undefined, meta
from jinja2.exceptions import TemplateError, TemplateSyntaxError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import COLLECTION_ROOT
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._cli_flags import arg_pair
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._formulas import PlanValueError
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_schema import validate_profile

ARG_KEYS = ("args",)
ENV_KEYS = ("env",)


class ProfileError(Exception):
    """A profile that cannot be loaded or rendered."""


class MissingVariable(UndefinedError):
    """A template needs a host variable the inventory does not set (``missing(...)``)."""


def missing(variable, host):
    """A context value for an unset host variable: using it names ``variable``, not a template."""
    return StrictUndefined(hint=variable, obj=host, name=variable, exc=MissingVariable)


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------
def default_profile_dir():
    return os.path.join(COLLECTION_ROOT, "profiles")


def list_profiles(profile_dir=None):
    profile_dir = profile_dir or default_profile_dir()
    names = []
    for entry in sorted(os.listdir(profile_dir)):
        if entry.endswith(".yml") and not entry.startswith("_"):
            names.append(entry[: -len(".yml")])
    return names


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FILES = {}  # path -> (mtime, size, data): a profile file is parsed once per change


def _read(name, profile_dir):
    path = os.path.join(profile_dir, name + ".yml")
    if not os.path.isfile(path):
        return None
    stat = os.stat(path)
    cached = _FILES.get(path)
    if cached is None or cached[:2] != (stat.st_mtime_ns, stat.st_size):
        with open(path, encoding="utf-8") as handle:
            data = yaml.load(handle, Loader=_LOADER) or {}  # noqa: S506 (a safe loader)
        cached = _FILES[path] = (stat.st_mtime_ns, stat.st_size, data)
    data = copy.deepcopy(cached[2])
    if not isinstance(data, dict):
        raise ProfileError("profile file %s is not a mapping" % path)
    return data


def load_profile(name, profile_dir=None, _seen=None):
    """Load a profile by name with its ``extends`` chain merged in order."""
    profile_dir = profile_dir or default_profile_dir()
    _seen = _seen or []
    if name in _seen:
        raise ProfileError("profile %s extends itself through %s" % (name, " -> ".join(_seen)))
    data = _read(name, profile_dir)
    if data is None:
        raise ProfileError("no profile named %r" % name)
    problems = validate_profile(data, os.path.join(profile_dir, name + ".yml"))  # before extends is merged
    if problems:
        raise ProfileError("; ".join(problems))
    merged = {}
    parents = data.pop("extends", []) or []
    if isinstance(parents, str):
        parents = [parents]
    for parent in parents:
        merged = merge(merged, load_profile(parent, profile_dir, _seen + [name]))
    merged.pop("variants", None)  # a variant reconfigures its own profile's deployment: not inherited
    merged = merge(merged, data)
    merged["name"] = name if not name.startswith("_") else merged.get("name", name)
    problems = variant_problems(merged, os.path.join(profile_dir, name + ".yml"))
    if problems:
        raise ProfileError("; ".join(problems))
    return merged


def variant_problems(profile, where):
    """A variant may only change parameters its profile has (a typo would otherwise change nothing)."""
    known = set(profile.get("parameters") or {})
    problems = []
    for vname, variant in sorted((profile.get("variants") or {}).items()):
        for pname in (variant or {}).get("parameters") or {}:
            if pname not in known:
                problems.append(
                    "%s: variant %s sets parameter %s, which profile %s does not have (its parameters: %s)"
                    % (where, vname, pname, profile["name"], ", ".join(sorted(known)) or "none")
                )
    return problems


def variant_names(profile):
    """The names of a loaded profile's variants, in file order."""
    return list(profile.get("variants") or {})


def with_variant(profile, name):
    """The profile with variant ``name``'s parameter defaults in place of its own (``name`` None: as it is)."""
    if name is None:
        return profile
    out = copy.deepcopy(profile)
    out["parameters"] = dict(out.get("parameters") or {}, **profile["variants"][name]["parameters"])
    return out


# --------------------------------------------------------------------------
# Merging
# --------------------------------------------------------------------------
def flag_key(flag):
    """The identity of a flag: ``--no-enable-x``, ``--enable_x`` and ``--enable-x`` are one flag."""
    key = flag.lstrip("-").replace("_", "-")
    if key.startswith("no-"):
        key = key[3:]
    return key


def normalize_args(items, where="args"):
    """Turn an args list into ``[(flag, value), ...]``."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise ProfileError("%s must be a list of flags, got %r" % (where, items))
    out = []
    for item in items:
        pair = arg_pair(item)
        if pair is None:
            raise ProfileError("%s: each item is a flag or a one-key mapping {flag: value}, got %r" % (where, item))
        flag, value = pair
        if not isinstance(flag, str) or not flag.startswith("-"):
            raise ProfileError("%s: %r is not a flag (flags start with -)" % (where, flag))
        out.append((flag, value))
    return out


def merge_args(*lists):
    """Merge args lists: first position of a flag, last value; spelling of the last one."""
    order = []
    chosen = {}
    for items in lists:
        for flag, value in normalize_args(items):
            key = flag_key(flag)
            if key not in chosen:
                order.append(key)
            chosen[key] = (flag, value)
    return [chosen[key] for key in order]


def merge_env(*dicts):
    out = {}
    for data in dicts:
        if not data:
            continue
        if not isinstance(data, dict):
            raise ProfileError("env must be a mapping of NAME: value, got %r" % (data,))
        for key, value in data.items():
            out[key] = value
    return out


def merge(base, over):
    """Deep merge for profile data: mappings recurse, args/env merge by key, the rest replaces."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return copy.deepcopy(over)
    out = copy.deepcopy(base)
    for key, value in over.items():
        if key in ARG_KEYS and key in out:
            out[key] = [{f: v} for f, v in merge_args(out[key], value)]
        elif key == "rules" and isinstance(out.get(key), list) and isinstance(value, list):
            out[key] = copy.deepcopy(out[key] + value)  # a profile's rules add to its fragments'
        elif key == "ports" and isinstance(out.get(key), list) and isinstance(value, list):
            named = {p.get("name"): p for p in out[key]}
            named.update({p.get("name"): p for p in value})
            out[key] = copy.deepcopy(list(named.values()))
        elif key in ENV_KEYS and key in out and isinstance(value, dict):
            out[key] = merge_env(out[key], value)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# --------------------------------------------------------------------------
# Templating
# --------------------------------------------------------------------------
class Renderer:
    """Render profile values against a context with the formula functions available."""

    def __init__(self, functions=None):
        self.env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)
        self.env.globals.update(functions or {})
        self.env.filters.update(functions or {})
        self.env.filters["to_json"] = compact_json
        self.env.globals["to_json"] = compact_json
        self._cache = {}

    def value(self, value, context, where):
        """Render a value recursively; whole-expression strings keep native types."""
        try:
            return self._value(value, context)
        except TypeError as exc:  # e.g. a value that JSON cannot hold
            raise ProfileError("%s: %s" % (where, exc)) from None
        except PlanValueError as exc:
            if not hasattr(exc, "names"):
                exc.names = self.names(value)  # the values it was computed from
            raise
        except MissingVariable:
            raise
        except UndefinedError as exc:
            raise ProfileError("%s: %s" % (where, exc)) from None
        except TemplateError as exc:
            raise ProfileError("%s: template error: %s" % (where, exc)) from None

    def names(self, value):
        """The context names a profile value refers to, sorted."""
        found = set()
        if isinstance(value, str) and ("{{" in value or "{%" in value):
            try:
                found.update(meta.find_undeclared_variables(self.env.parse(value)))
            except TemplateSyntaxError:
                pass
        elif isinstance(value, dict):
            for key, item in value.items():
                found.update(self.names(key))
                found.update(self.names(item))
        elif isinstance(value, list):
            for item in value:
                found.update(self.names(item))
        return sorted(found)

    def _compiled(self, value):
        """(expression, None) for a string that is one ``{{ expression }}``, else (None, template); cached."""
        found = self._cache.get(value)
        if found is None:
            expr = None
            stripped = value.strip()
            if stripped.startswith("{{") and stripped.endswith("}}"):
                try:
                    expr = self.env.compile_expression(stripped[2:-2].strip(), undefined_to_none=False)
                except TemplateSyntaxError:
                    expr = None  # several expressions with text between them
            found = (expr, None) if expr is not None else (None, self.env.from_string(value))
            if len(self._cache) < 4096:
                self._cache[value] = found
        return found

    def _value(self, value, context):
        if isinstance(value, str):
            if "{{" not in value and "{%" not in value:
                return value
            expr, template = self._compiled(value)
            if expr is not None:
                result = expr(**context)
                if isinstance(result, Undefined):
                    str(result)  # raises: an expression that is exactly an undefined name
                return result
            return template.render(**context)
        if isinstance(value, dict):
            return {self._value(k, context): self._value(v, context) for k, v in value.items()}
        if isinstance(value, list):
            return [self._value(v, context) for v in value]
        return value


def compact_json(value):
    """JSON the way the recipes' shell scripts write it: no spaces, key order kept."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ProfileError("cannot write %r as JSON: %s" % (value, exc)) from None


def render_args(pairs):
    """Turn rendered ``(flag, value)`` pairs into argv tokens."""
    argv = []
    for flag, value in pairs:
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, dict) and set(value) == {"$repeat"}:
            for item in value["$repeat"] or []:
                argv.extend([flag, _scalar(item)])
        elif isinstance(value, dict) and set(value) == {"$json"}:
            argv.extend([flag, compact_json(value["$json"])])
        elif isinstance(value, dict):
            argv.extend([flag, compact_json(value)])
        elif isinstance(value, (list, tuple)):
            argv.append(flag)
            argv.extend(_scalar(v) for v in value)
        else:
            argv.extend([flag, _scalar(value)])
    return argv


def _scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return compact_json(value)
    return str(value)


def render_env(env):
    """Rendered env mapping -> ``{NAME: str}``; ``None`` drops the variable."""
    out = {}
    for key, value in (env or {}).items():
        if value is None:
            continue
        out[str(key)] = _scalar(value)
    return out


def argv_flags(argv):
    """Map flag key -> value token for the flags of an argv (last one wins)."""
    out = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        if token.startswith("--"):
            name, eq, inline = token.partition("=")
            if eq:
                out[flag_key(name)] = inline
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out[flag_key(name)] = argv[i + 1]
                i += 1
            else:
                out[flag_key(name)] = "false" if name.startswith("--no-") else "true"
        i += 1
    return out
