# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The plan and profile contracts: JSON Schemas shipped in ``data/`` and their checks.

* ``data/plan-v1.schema.json``: the plan :func:`planner.build_plan` writes
  (``plan.json``) and the roles read; :func:`validate_plan`.
* ``data/profile.schema.json``: one file of ``profiles/`` as it is read, before
  its ``extends`` chain is merged; :func:`validate_profile`.

Both return a list of problems, empty when the document is valid; each names
the JSON path of what is wrong (``$.hosts['h1'].services[0].kind: ...``).

The ``jsonschema`` library is used when it is installed. Where only
ansible-core is, a small validator for the part of JSON Schema these two
schemas use (``BUILTIN_KEYWORDS``) checks them instead, with the same messages.
Plain Python: no Ansible imports.
"""

from __future__ import annotations

import functools
import json
import os
import re

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import DATA_DIR

try:
    import jsonschema
except ImportError:  # ansible-core alone: the built-in validator below
    jsonschema = None

PLAN_SCHEMA_VERSION = 1
PLAN_SCHEMA_FILE = "plan-v%d.schema.json" % PLAN_SCHEMA_VERSION
PROFILE_SCHEMA_FILE = "profile.schema.json"
# validate_profile's answers by the JSON text of the data.
_PROFILE_PROBLEMS = {}

# Keywords the built-in validator checks, and keywords that only annotate.
BUILTIN_KEYWORDS = frozenset(
    (
        "$ref",
        "type",
        "const",
        "enum",
        "properties",
        "additionalProperties",
        "required",
        "propertyNames",
        "items",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minLength",
        "minimum",
        "maximum",
        "pattern",
        "anyOf",
    )
)
ANNOTATIONS = frozenset(("$schema", "$id", "$defs", "$comment", "title", "description", "deprecated", "default"))


def backend():
    """``jsonschema`` when the library is installed, else ``builtin``."""
    return "jsonschema" if jsonschema is not None else "builtin"


@functools.cache
def _load(filename):
    with open(os.path.join(DATA_DIR, filename), encoding="utf-8") as handle:
        return json.load(handle)


def plan_schema():
    """The plan schema (a fresh copy: callers may change it)."""
    return json.loads(json.dumps(_load(PLAN_SCHEMA_FILE)))


def profile_schema():
    """The profile file schema (a fresh copy)."""
    return json.loads(json.dumps(_load(PROFILE_SCHEMA_FILE)))


def validate_plan(plan):
    """Problems of a plan against the plan schema; empty when it is valid."""
    return validate(_load(PLAN_SCHEMA_FILE), plan)


def validate_profile(data, where):
    """Problems of one profile file's data (``where`` names the file); empty when it is valid.

    The planner reads every file of a profile's chain for each plan: the answer for data
    already seen is remembered (keyed by its JSON text).
    """
    try:
        seen = json.dumps(data, sort_keys=True)
    except (TypeError, ValueError):  # not JSON data (e.g. a YAML date): validate, do not remember
        seen = None
    if seen is not None and seen in _PROFILE_PROBLEMS:
        problems = _PROFILE_PROBLEMS[seen]
    else:
        problems = validate(_load(PROFILE_SCHEMA_FILE), data)
        if seen is not None:
            if len(_PROFILE_PROBLEMS) >= 256:
                _PROFILE_PROBLEMS.clear()
            _PROFILE_PROBLEMS[seen] = problems
    return ["%s: %s" % (where, problem) for problem in problems]


def validate(schema, instance, use=None):
    """Problems of ``instance`` against ``schema``; ``use`` forces ``jsonschema`` or ``builtin``."""
    use = use or backend()
    if use == "jsonschema":
        if jsonschema is None:
            return ["$: cannot validate: the jsonschema library is not installed"]
        errors = [
            _from_library(e) for e in _library_validator(json.dumps(schema, sort_keys=True)).iter_errors(instance)
        ]
    elif use == "builtin":
        errors = list(_Builtin(schema).errors(instance, schema, ()))
    else:
        raise ValueError("unknown validator %r (use jsonschema or builtin)" % (use,))
    out = []
    for error in errors:
        out.extend(_messages(error, schema))
    return sorted(set(out))


# --------------------------------------------------------------------------
# One error, from either validator
# --------------------------------------------------------------------------
class _Error:
    """A failed keyword: where (instance path), which keyword, its value, the instance and its schema.

    ``branches``: for ``anyOf``, the errors of each alternative. ``key``: the
    error is about a property name (``propertyNames``), not a value.
    """

    __slots__ = ("branches", "instance", "key", "keyword", "path", "schema", "value")

    def __init__(self, path, keyword, value, instance, schema, *, branches=None, key=False):
        self.path = tuple(path)
        self.keyword = keyword
        self.value = value
        self.instance = instance
        self.schema = schema
        self.branches = branches
        self.key = key


@functools.cache
def _library_validator(schema_text):
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def _from_library(error):
    branches = None
    if error.validator == "anyOf":
        branches = [[] for _unused in error.validator_value]
        for sub in error.context:
            branches[sub.relative_schema_path[0]].append(_from_library(sub))
    return _Error(
        error.absolute_path,
        error.validator,
        error.validator_value,
        error.instance,
        error.schema,
        branches=branches,
        key="propertyNames" in error.relative_schema_path,
    )


# --------------------------------------------------------------------------
# The built-in validator (the keywords of BUILTIN_KEYWORDS)
# --------------------------------------------------------------------------
def json_type(value):
    """The JSON type name of a Python value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value, name):
    have = json_type(value)
    return have == name or (name == "number" and have == "integer")


def _json_equal(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _resolve(root, ref):
    if not ref.startswith("#/"):
        raise ValueError("only local references (#/...) are supported, not %r" % ref)
    node = root
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


class _Builtin:
    def __init__(self, root):
        self.root = root

    def errors(self, instance, schema, path, key=False):
        if schema is True or schema == {}:
            return
        if schema is False:
            yield _Error(path, "false", False, instance, schema, key=key)
            return
        for keyword in schema:
            if keyword not in BUILTIN_KEYWORDS and keyword not in ANNOTATIONS:
                raise ValueError("the built-in validator does not know the keyword %r" % keyword)
        if "$ref" in schema:
            yield from self.errors(instance, _resolve(self.root, schema["$ref"]), path, key)
        yield from self.value_errors(instance, schema, path, key)
        if isinstance(instance, str):
            yield from _string_errors(instance, schema, path, key)
        if json_type(instance) in ("integer", "number"):
            yield from _number_errors(instance, schema, path, key)
        if isinstance(instance, (list, tuple)):
            yield from self.array_errors(instance, schema, path)
        if isinstance(instance, dict):
            yield from self.object_errors(instance, schema, path)

    def value_errors(self, instance, schema, path, key):
        """type, const, enum and anyOf: what any value is checked against."""
        types = schema.get("type")
        if types is not None:
            names = types if isinstance(types, list) else [types]
            if not any(_is_type(instance, n) for n in names):
                yield _Error(path, "type", types, instance, schema, key=key)
        if "const" in schema and not _json_equal(instance, schema["const"]):
            yield _Error(path, "const", schema["const"], instance, schema, key=key)
        if "enum" in schema and not any(_json_equal(instance, v) for v in schema["enum"]):
            yield _Error(path, "enum", schema["enum"], instance, schema, key=key)
        if "anyOf" in schema:
            branches = [list(self.errors(instance, sub, path, key)) for sub in schema["anyOf"]]
            if all(branches):
                yield _Error(path, "anyOf", schema["anyOf"], instance, schema, branches=branches, key=key)

    def array_errors(self, instance, schema, path):
        if "minItems" in schema and len(instance) < schema["minItems"]:
            yield _Error(path, "minItems", schema["minItems"], instance, schema)
        if "maxItems" in schema and len(instance) > schema["maxItems"]:
            yield _Error(path, "maxItems", schema["maxItems"], instance, schema)
        if "items" in schema:
            for index, item in enumerate(instance):
                yield from self.errors(item, schema["items"], path + (index,))

    def object_errors(self, instance, schema, path):
        if "minProperties" in schema and len(instance) < schema["minProperties"]:
            yield _Error(path, "minProperties", schema["minProperties"], instance, schema)
        if "maxProperties" in schema and len(instance) > schema["maxProperties"]:
            yield _Error(path, "maxProperties", schema["maxProperties"], instance, schema)
        missing = [name for name in schema.get("required", []) if name not in instance]
        if missing:
            yield _Error(path, "required", schema["required"], instance, schema)
        if "propertyNames" in schema:
            for name in instance:
                yield from self.errors(name, schema["propertyNames"], path, key=True)
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        extras = []
        for name, value in instance.items():
            if name in properties:
                yield from self.errors(value, properties[name], path + (name,))
            elif extra is False:
                extras.append(name)
            elif extra is not True:
                yield from self.errors(value, extra, path + (name,))
        if extras:
            yield _Error(path, "additionalProperties", False, instance, schema)


# --------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def json_path(path):
    """``$.a.b[0]['odd-key']`` for a path of keys and indexes."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += "[%d]" % part
        elif _NAME.match(str(part)):
            out += "." + str(part)
        else:
            out += "[%r]" % str(part)
    return out


def _show(value, limit=60):
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _types(schema, root, seen=()):
    """The JSON types a schema can accept, or None when it does not say."""
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema and schema["$ref"] not in seen:
        return _types(_resolve(root, schema["$ref"]), root, (*seen, schema["$ref"]))
    if "type" in schema:
        return set(schema["type"] if isinstance(schema["type"], list) else [schema["type"]])
    if "const" in schema:
        return {json_type(schema["const"])}
    if "enum" in schema:
        return {json_type(v) for v in schema["enum"]}
    if "anyOf" in schema:
        out = set()
        for sub in schema["anyOf"]:
            types = _types(sub, root, seen)
            if types is None:
                return None
            out |= types
        return out
    return None


def _string_errors(instance, schema, path, key):
    if "minLength" in schema and len(instance) < schema["minLength"]:
        yield _Error(path, "minLength", schema["minLength"], instance, schema, key=key)
    if "pattern" in schema and not re.search(schema["pattern"], instance):
        yield _Error(path, "pattern", schema["pattern"], instance, schema, key=key)


def _number_errors(instance, schema, path, key):
    if "minimum" in schema and instance < schema["minimum"]:
        yield _Error(path, "minimum", schema["minimum"], instance, schema, key=key)
    if "maximum" in schema and instance > schema["maximum"]:
        yield _Error(path, "maximum", schema["maximum"], instance, schema, key=key)


def _fits(instance, types):
    return types is None or any(_is_type(instance, t) for t in types)


def _messages(error, root):
    where = json_path(error.path)
    subject = "key %s" % _show(error.instance) if error.key else _show(error.instance)
    keyword, value = error.keyword, error.value
    if keyword in _STRUCTURE_MESSAGES:
        return _STRUCTURE_MESSAGES[keyword](error, root, where, subject)
    if keyword in _VALUE_MESSAGES:
        return ["%s: %s" % (where, _VALUE_MESSAGES[keyword](subject, value, error.instance))]
    if keyword in _LIMITS:
        return ["%s: %s is %s" % (where, subject, _LIMITS[keyword] % value)]
    if keyword == "false":
        return ["%s: not allowed" % where]
    return ["%s: %s fails %s %s" % (where, subject, keyword, _show(value))]


def _unknown_keys(error, _root, _where, _subject):
    known = ", ".join(sorted((error.schema or {}).get("properties", {}))) or "none"
    return [
        "%s: unknown key (known here: %s)" % (json_path((*error.path, name)), known)
        for name in error.instance
        if name not in (error.schema or {}).get("properties", {})
    ]


def _missing_keys(error, _root, _where, _subject):
    return [
        "%s: missing (required)" % json_path((*error.path, name)) for name in error.value if name not in error.instance
    ]


def _no_alternative(error, root, where, subject):
    fitting = [i for i, sub in enumerate(error.value) if _fits(error.instance, _types(sub, root))]
    if len(fitting) == 1:
        out = []
        for sub_error in error.branches[fitting[0]]:
            out.extend(_messages(sub_error, root))
        return out
    accepted = set()
    for sub in error.value:
        accepted |= _types(sub, root) or {"a value of another shape"}
    return ["%s: %s is not %s" % (where, subject, " or ".join(sorted(accepted)))]


_STRUCTURE_MESSAGES = {"additionalProperties": _unknown_keys, "required": _missing_keys, "anyOf": _no_alternative}
_VALUE_MESSAGES = {
    "type": lambda subject, value, instance: (
        "%s is %s, expected %s"
        % (subject, json_type(instance), " or ".join(value if isinstance(value, list) else [value]))
    ),
    "const": lambda subject, value, _instance: "%s, expected %s" % (subject, _show(value)),
    "enum": lambda subject, value, _instance: "%s is not one of %s" % (subject, ", ".join(_show(v) for v in value)),
    "pattern": lambda subject, value, _instance: "%s does not match %s" % (subject, value),
}
_LIMITS = {
    "minLength": "shorter than %s characters",
    "minimum": "less than %s",
    "maximum": "more than %s",
    "minItems": "fewer than %s items",
    "maxItems": "more than %s items",
    "minProperties": "fewer than %s keys",
    "maxProperties": "more than %s keys",
}
