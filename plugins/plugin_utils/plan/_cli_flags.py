# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Extra flags checked against the flags the real programs take (no Ansible imports).

The flag lists are data, read from the pinned programs by ``tools/gen_cli_flags.py``:
``data/cli_flags_vllm.json`` (``vllm serve``), ``data/cli_flags_vllm_router.json``
(``vllm-router``) and ``data/cli_flags_proxy.json`` (the Ascend P/D proxy,
``load_balance_proxy_server_example.py``). Each maps every option string of its program to
whether it takes a value, and its header says how the program treats other spellings.

:func:`check_args` takes an args list in the format of ``profiles.normalize_args`` (a bare
``--flag`` or a one-key mapping ``{--flag: value}``) and returns a list of problems, each a
sentence naming the flag and the real flag nearest to it. It refuses:

- a flag the program does not have (nearest real flags named);
- an abbreviation: a unique or ambiguous prefix of real flags (argparse would complete a unique
  one, but the plan spells every flag in full);
- ``--a_b`` where the program does not turn underscores into dashes (vLLM does, the router
  and the proxy do not);
- ``--no-X`` where the program has no ``--no-X`` (only vLLM's on/off flags have one);
- a value given to a flag that takes none, and a bare flag that needs a value.

``{--flag: null}`` and ``{--flag: false}`` drop a flag from the profile and put nothing on the
command line: they are accepted in any spelling of a flag the program has. Values that are still
Jinja templates (text holding ``{{``) are not checked. It never raises on the shape of its input:
a wrong shape is a problem too.
"""

from __future__ import annotations

import difflib
import json
import os

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import DATA_DIR

PROGRAMS = ("vllm", "vllm-router", "proxy")

# The inventory variable each program's extra flags come from: the default ``where``.
ARGS_VARIABLES = {"vllm": "k3_vllm_args", "vllm-router": "k3_router_args", "proxy": "k3_proxy_args"}

_DATA_DIR = DATA_DIR
_CACHE = {}


def data_path(program):
    return os.path.join(_DATA_DIR, "cli_flags_%s.json" % program.replace("-", "_"))


def program_data(program):
    """The data of one program: ``{"header": {...}, "flags": {option: "none"|"optional"|"required"}}``."""
    if program not in PROGRAMS:
        raise ValueError("unknown program %r: one of %s" % (program, ", ".join(PROGRAMS)))
    if program not in _CACHE:
        with open(data_path(program), encoding="utf-8") as handle:
            _CACHE[program] = json.load(handle)
    return _CACHE[program]


def known_flags(program):
    """Every option string ``program`` takes, sorted (``-h`` and ``--help`` included)."""
    return sorted(program_data(program)["flags"])


def _key(flag):
    """A flag's identity for the planner: ``--no-x``, ``--x_y`` and ``--x-y`` are one flag."""
    key = flag.lstrip("-").replace("_", "-")
    return key[3:] if key.startswith("no-") else key


def _short(value, limit=60):
    try:
        text = repr(value)
    except Exception:
        text = "<%s>" % type(value).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def nearest_flags(program, flag, count=3):
    """The real flags of ``program`` nearest to ``flag`` (at least one), best first."""
    flags = program_data(program)["flags"]
    long_flags = [f for f in flags if f.startswith("--")] if flag.startswith("--") else list(flags)
    text = flag.replace("_", "-")
    close = difflib.get_close_matches(text, long_flags, n=count, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(text, long_flags, n=1, cutoff=0.0)
    return close


def _nearest_text(program, flag):
    near = nearest_flags(program, flag)
    return "nearest: %s" % ", ".join(near) if near else "no flag is near it"


def _is_template(value):
    return isinstance(value, str) and "{{" in value


def _check_value(program, flag, spelled, kind, value):
    """A problem with the value given to a real flag, or None."""
    if value is None or value is False or _is_template(value):
        return None
    if kind == "none" and value is not True:
        return "%s takes no value in %s, got %s (give it bare to set it, null to drop it)" % (
            spelled,
            program,
            _short(value),
        )
    if kind == "required" and value is True:
        return "%s needs a value in %s (give {%s: VALUE})" % (spelled, program, flag)
    return None


def arg_pair(item):
    """``(flag, value)`` of one args item (``"--flag"``, ``{"--flag": value}`` or a pair); None for another shape."""
    if isinstance(item, str):
        return item, True
    if isinstance(item, dict) and len(item) == 1:
        return next(iter(item.items()))
    if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
        return tuple(item)
    return None


def _items(items, where):
    """``([(flag, value)], [problems])`` from an args list, whatever its shape."""
    if items is None:
        return [], []
    if not isinstance(items, (list, tuple)):
        return [], ["%s must be a list of flags, got %s" % (where, _short(items))]
    pairs = []
    problems = []
    for item in items:
        pair = arg_pair(item)
        if pair is None:
            problems.append(
                "%s: each item is a flag or a one-key mapping {flag: value}, got %s" % (where, _short(item))
            )
            continue
        flag, value = pair
        if not isinstance(flag, str):
            problems.append("%s: %s is not a flag (flags are text starting with -)" % (where, _short(flag)))
        elif not flag.startswith("-") or flag.strip("-") == "":
            problems.append("%s: %s is not a flag (flags start with -)" % (where, _short(flag)))
        else:
            pairs.append((flag, value))
    return pairs, problems


# A stage of _check_flag that has nothing to say about the flag hands it to the next one.
_NEXT = object()


def _bare(value):
    return value is True or value is None or value is False


def _check_flag(program, flag, value):
    """A problem with one ``(flag, value)`` of ``program``'s args, or None."""
    data = program_data(program)
    for stage in (_joined_value, _help_flag, _exact_flag, _rewritten_flag, _attached_value, _dotted_flag):
        result = stage(program, data, flag, value)
        if result is not _NEXT:
            return result
    spelled = _spelling(data, flag)
    for stage in (_spelled_flag, _dropped_flag, _underscored_flag, _prefix_flag, _negated_flag):
        result = stage(program, data, flag, spelled, value)
        if result is not _NEXT:
            return result
    return "%s is not a %s flag (%s)" % (flag, program, _nearest_text(program, spelled.replace("_", "-")))


def _joined_value(program, data, flag, _value):
    for separator in ("=", " "):
        if separator in flag:
            head = flag.split(separator, 1)[0]
            return "%s: give the flag and its value as a mapping {%s: VALUE}, not one text (%s)" % (
                _short(flag),
                head,
                "a real flag" if head in data["flags"] else _nearest_text(program, head),
            )
    return _NEXT


def _help_flag(program, _data, flag, _value):
    if flag in ("-h", "--help"):
        return "%s makes %s print its help and exit: it is no flag to serve with" % (flag, program)
    return _NEXT


def _exact_flag(program, data, flag, value):
    if flag in data["flags"]:
        return _check_value(program, flag, flag, data["flags"][flag], value)
    return _NEXT


def _rewritten_flag(program, data, flag, value):
    """vLLM's own rewrites: -O3, -O.key, -O=3 are --optimization-level."""
    for short, full in (data.get("header", {}).get("rewrites") or {}).items():
        if flag == short:
            return _check_value(program, flag, flag, data["flags"].get(full, "required"), value)
        if flag.startswith(short):
            return None if _bare(value) else _holds_value(flag, short)
    return _NEXT


def _attached_value(_program, data, flag, value):
    """A one-letter option with its value attached (-qfp8), as argparse takes it."""
    if not flag.startswith("--") and len(flag) > 2 and data["flags"].get(flag[:2]) == "required":
        return None if _bare(value) else _holds_value(flag, flag[:2])
    return _NEXT


def _holds_value(flag, short):
    return "%s already holds its value: give it bare, or {%s: VALUE}" % (flag, short)


def _dotted_flag(program, data, flag, value):
    """--flag.key value: vLLM turns it into --flag '{"key": value}'."""
    base, dot, _rest = flag.partition(".")
    if not flag.startswith("--") or not dot:
        return _NEXT
    header = data.get("header", {})
    if header.get("underscores"):
        base = base.replace("_", "-")
    if base in (header.get("dotted_keys") or []):
        return "%s needs a value in %s" % (flag, program) if value is True else None
    if base in data["flags"]:
        return "%s: %s takes no %s.KEY form (only flags holding a JSON object do)" % (flag, base, base)
    return "%s is not a %s flag (%s)" % (flag, program, _nearest_text(program, base))


def _spelling(data, flag):
    if flag.startswith("--") and data.get("header", {}).get("underscores"):
        return flag.replace("_", "-")
    return flag


def _spelled_flag(program, data, flag, spelled, value):
    if spelled in data["flags"]:
        return _check_value(program, flag, spelled, data["flags"][spelled], value)
    return _NEXT


def _dropped_flag(_program, data, flag, _spelled, value):
    """Dropping a flag ({--flag: null} or false) writes nothing: any spelling of a real flag will do."""
    if (value is None or value is False) and any(_key(real) == _key(flag) for real in data["flags"]):
        return None
    return _NEXT


def _underscored_flag(program, data, flag, spelled, _value):
    dashed = spelled.replace("_", "-")
    if "_" in spelled and dashed in data["flags"]:
        return "%s: %s does not take underscores in flags, write %s" % (flag, program, dashed)
    return _NEXT


def _prefix_flag(program, data, flag, spelled, _value):
    dashed = spelled.replace("_", "-")
    prefixed = sorted(real for real in data["flags"] if real.startswith(dashed) and real != dashed)
    if len(prefixed) == 1:
        return "%s is an abbreviation of %s: write the full flag" % (flag, prefixed[0])
    if len(prefixed) > 1:
        prefixed.sort(key=lambda real: (len(real), real))  # the shortest are the likeliest meant
        shown = ", ".join(prefixed[:6]) + (", ..." if len(prefixed) > 6 else "")
        return "%s is an ambiguous prefix of %d %s flags (%s): write the full flag" % (
            flag,
            len(prefixed),
            program,
            shown,
        )
    return _NEXT


def _negated_flag(program, data, flag, spelled, _value):
    dashed = spelled.replace("_", "-")
    positive = "--" + dashed[len("--no-") :]
    if dashed.startswith("--no-") and positive in data["flags"]:
        return "%s: %s has no %s (%s is not an on/off flag); to drop %s give {%s: null}" % (
            flag,
            program,
            dashed,
            positive,
            positive,
            positive,
        )
    return _NEXT


def check_args(program, items, where=None):
    """Problems with ``items``, an args list of ``program`` (``vllm``, ``vllm-router`` or ``proxy``).

    Returns a list of sentences, empty when every flag is one the program takes, each starting
    with ``where`` (by default the inventory variable of the program, e.g. ``k3_vllm_args``).
    Never raises on the shape of ``items``.
    """
    if program not in PROGRAMS:
        return ["unknown program %s: one of %s" % (_short(program), ", ".join(PROGRAMS))]
    where = where or ARGS_VARIABLES[program]
    pairs, problems = _items(items, where)
    for flag, value in pairs:
        problem = _check_flag(program, flag, value)
        if problem:
            problems.append("%s: %s" % (where, problem))
    return problems
