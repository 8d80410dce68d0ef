# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Write the flag lists of vLLM, vllm-router and the Ascend P/D proxy, read from the real programs.

    .venv/ansible/bin/python tools/gen_cli_flags.py            # rewrite the data files
    .venv/ansible/bin/python tools/gen_cli_flags.py --check    # exit 1 if the committed data differs

The data lives in plugins/plugin_utils/data/cli_flags_<program>.json and is read by
plugins/plugin_utils/plan/_cli_flags.py. Each file has a header (program, version, how it was made)
and `flags`: every option string the program takes, mapped to whether it takes a value
("none", "optional" or "required"). Header keys read by the checker: `underscores` (the program
reads `--a_b` as `--a-b`), `abbreviations` (the program completes a unique prefix; the checker
refuses prefixes all the same), `rewrites` (spellings the program turns into another flag before
parsing) and `dotted_keys` (flags that take `--flag.key value`).

- vllm: vLLM's own parser for `vllm serve` (FlexibleArgumentParser with the serve subcommand,
  built by ServeSubcommand.subparser_init as `vllm serve` builds it), run with the Python of
  .venv/vllm. Every option string, `--no-*` forms of boolean-optional flags included. How the
  parser treats other spellings (underscores, unique prefixes, `--flag.key value`, `-O3`) is
  found by trying them on the same parser.
- vllm-router: `vllm-router --help` of .venv/services. Its spelling rules are found the same
  way, with a flag that has a list of choices and a value outside it, so the program always
  stops at its argument parser and never starts.
- proxy: the proxy is not installed here. Its flags are read from the argparse calls of its
  upstream source; `--proxy-source FILE --proxy-commit SHA` reads them again from a copy of
  that file (its `add_argument` calls are read as syntax, the file is never run). Without
  `--proxy-source`, the committed proxy data is kept as it is (and --check only checks its form).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = ROOT / "plugins" / "plugin_utils" / "data"
VLLM_PYTHON = ROOT / ".venv" / "vllm" / "bin" / "python"
ROUTER_BIN = ROOT / ".venv" / "services" / "bin" / "vllm-router"
PROGRAMS = ("vllm", "vllm-router", "proxy")
GENERATOR = "tools/gen_cli_flags.py"
VALUE_KINDS = ("none", "optional", "required")

PROXY_UPSTREAM = {
    "repository": "vllm-project/vllm-ascend",
    "path": "examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py",
}


def data_path(program, data_dir=DATA_DIR):
    return Path(data_dir) / ("cli_flags_%s.json" % program.replace("-", "_"))


def shown(path):
    path = Path(path).resolve()
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def dump(data):
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


# --------------------------------------------------------------------------
# vllm: the serve parser, inside .venv/vllm
# --------------------------------------------------------------------------
# Run by .venv/vllm/bin/python. Prints one line `K3-CLI-FLAGS <json>` on stdout.
VLLM_PROBE = r'''
import contextlib, io, json, os, sys
from importlib.metadata import version

from vllm.entrypoints.cli.serve import ServeSubcommand
from vllm.utils.argparse_utils import FlexibleArgumentParser


def build():
    parser = FlexibleArgumentParser(prog="vllm")
    subparsers = parser.add_subparsers(dest="subparser")
    return parser, ServeSubcommand().subparser_init(subparsers)


def value_kind(action):
    if action.nargs == 0:
        return "none"
    if action.nargs in ("?", "*"):
        return "optional"
    return "required"


def parse(parser, argv):
    """The namespace if the parser takes ``vllm serve model <argv>``, else the first line of its error."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            return parser.parse_args(["serve", "model", *argv])
    except SystemExit:
        text = captured.getvalue()
        marker = text.find("error: ")
        return text[marker:].strip().splitlines()[0] if marker >= 0 else text.strip()
    except Exception as exc:
        return "%s: %s" % (type(exc).__name__, exc)
    finally:
        FlexibleArgumentParser._search_keyword = None


def accepts(parser, argv):
    result = parse(parser, argv)
    return result if isinstance(result, str) else True


parser, serve = build()
actions = serve._option_string_actions
flags = {option: value_kind(actions[option]) for option in sorted(actions)}

# A flag with choices, and a unique prefix of it: given a value outside the choices, the parser
# says "invalid choice" if it took the spelling.
choice_flag = next(
    option
    for option in sorted(actions)
    if option.startswith("--")
    and "-" in option[2:]
    and actions[option].choices
    and actions[option].nargs is None
    and not any(o != option and o.startswith(option[:-1]) for o in actions)
)
bogus = "k3-not-a-choice"
spelled_underscore = "--" + choice_flag[2:].replace("-", "_")
prefix = choice_flag[:-1]


def stops_at_value(result):
    return result is not True and "invalid choice" in result


rules = {
    "underscores": stops_at_value(accepts(parser, [spelled_underscore, bogus])),
    "abbreviations": stops_at_value(accepts(parser, [prefix, bogus])),
    "probe_flag": choice_flag,
}

# `--flag.key value`: vLLM turns it into `--flag '{"key": value}'`, which means something for
# the flags that parse a JSON object (given `{}`, their value is not the text "{}").
dotted = []
for option in sorted(actions):
    if option.startswith("--") and flags[option] == "required" and actions[option].nargs is None:
        result = parse(parser, [option, "{}"])
        if not isinstance(result, str) and not isinstance(getattr(result, actions[option].dest, None), str):
            dotted.append(option)

# -O3 / -O.key: vLLM rewrites -O into --optimization-level before parsing.
rewrites = {}
if accepts(parser, ["-O3"]) is True and accepts(parser, ["-O", "3"]) is True and "-O" not in actions:
    rewrites["-O"] = "--optimization-level"

print("K3-CLI-FLAGS " + json.dumps({
    "version": version("vllm"),
    "flags": flags,
    "rules": rules,
    "dotted_keys": dotted,
    "rewrites": rewrites,
}))
'''


def vllm_data(python=VLLM_PYTHON):
    with tempfile.TemporaryDirectory(prefix="k3-cli-flags-") as scratch:
        env = dict(os.environ)
        for variable, name in (
            ("TMPDIR", "tmp"),
            ("VLLM_CACHE_ROOT", "vllm-cache"),
            ("HF_HOME", "hf-home"),
            ("XDG_CACHE_HOME", "xdg-cache"),
            ("TORCHINDUCTOR_CACHE_DIR", "inductor-cache"),
        ):
            os.makedirs(os.path.join(scratch, name), exist_ok=True)
            env[variable] = os.path.join(scratch, name)
        env.update(
            VLLM_LOGGING_STREAM="ext://sys.stderr",
            VLLM_LOGGING_LEVEL="ERROR",
            VLLM_NO_USAGE_STATS="1",
            DO_NOT_TRACK="1",
            HF_HUB_OFFLINE="1",
        )
        proc = subprocess.run(
            [str(python), "-c", VLLM_PROBE],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            cwd=scratch,
            timeout=600,
        )
    found = [line for line in proc.stdout.splitlines() if line.startswith("K3-CLI-FLAGS ")]
    if proc.returncode != 0 or not found:
        raise RuntimeError("reading vLLM's serve parser failed (rc=%d):\n%s" % (proc.returncode, proc.stderr[-4000:]))
    probe = json.loads(found[-1].split(" ", 1)[1])
    version = probe["version"].split("+")[0]
    return {
        "header": {
            "program": "vllm",
            "command": "vllm serve",
            "version": version,
            "build": probe["version"],
            "generated_by": GENERATOR,
            "source": (
                "vLLM's parser for `vllm serve`: FlexibleArgumentParser with the serve subcommand "
                "(vllm.entrypoints.cli.serve.ServeSubcommand.subparser_init), every option string of it"
            ),
            "underscores": probe["rules"]["underscores"],
            "abbreviations": probe["rules"]["abbreviations"],
            "rules_probed_with": probe["rules"]["probe_flag"],
            "rewrites": probe["rewrites"],
            "dotted_keys": probe["dotted_keys"],
        },
        "flags": probe["flags"],
    }


# --------------------------------------------------------------------------
# vllm-router: its --help
# --------------------------------------------------------------------------
def router_env():
    env = dict(os.environ)
    env["COLUMNS"] = "1000"  # one line per option in argparse's help
    env.pop("PYTHONPATH", None)
    return env


def parse_argparse_help(text):
    """``{option: value kind}`` from the option lines of an argparse --help."""
    flags = {}
    in_options = False
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):
            in_options = line.rstrip(":").lower() != "usage" and not line.startswith("usage:")
            continue
        if not in_options:
            continue
        match = re.match(r"^  (-\S.*?)(?:\s{2,}|$)", line)
        if not match:
            continue
        for part in match.group(1).split(", "):
            option, _unused, metavar = part.partition(" ")
            if not re.match(r"^--?[A-Za-z0-9][\w.-]*$", option):
                raise RuntimeError("unexpected option line in --help: %r" % line)
            if not metavar:
                kind = "none"
            elif metavar.startswith("["):
                kind = "optional"
            else:
                kind = "required"
            flags[option] = kind
    return dict(sorted(flags.items()))


def run_router(router, args):
    proc = subprocess.run(
        [str(router), *args], check=False, capture_output=True, text=True, env=router_env(), timeout=120
    )
    return proc.returncode, proc.stdout + proc.stderr


def router_data(router=ROUTER_BIN):
    rc, text = run_router(router, ["--help"])
    if rc != 0:
        raise RuntimeError("vllm-router --help failed (rc=%d):\n%s" % (rc, text[-4000:]))
    flags = parse_argparse_help(text)
    if "--host" not in flags or "--vllm-pd-disaggregation" not in flags:
        raise RuntimeError("vllm-router --help lists no --host or --vllm-pd-disaggregation: not the router?")
    # A flag with a list of choices, given a value outside it: the program stops at its parser,
    # saying either "invalid choice" (it took the spelling) or "unrecognized arguments".
    choice_flag = next(
        option
        for option in flags
        if option.startswith("--")
        and "-" in option[2:]
        and re.search(r"^  %s \{" % re.escape(option), text, re.MULTILINE)
        and not any(o != option and o.startswith(option[:-1]) for o in flags)
    )
    prefix = choice_flag[:-1]
    bogus = "k3-not-a-choice"
    spellings = {}
    for rule, spelled in (("underscores", "--" + choice_flag[2:].replace("-", "_")), ("abbreviations", prefix)):
        rc, out = run_router(router, [spelled, bogus])
        if rc == 0:
            raise RuntimeError("vllm-router %s %s did not stop at its argument parser" % (spelled, bogus))
        spellings[rule] = "invalid choice" in out
    return {
        "header": {
            "program": "vllm-router",
            "command": "vllm-router",
            "version": router_version(router),
            "generated_by": GENERATOR,
            "source": "`vllm-router --help` (the package's Python launcher, vllm_router.launch_router, argparse)",
            "underscores": spellings["underscores"],
            "abbreviations": spellings["abbreviations"],
            "rules_probed_with": choice_flag,
            "rewrites": {},
            "dotted_keys": [],
        },
        "flags": flags,
    }


def router_version(router):
    """The vllm-router package's version, from the Python of the venv the program is in."""
    python = Path(router).parent / "python"
    proc = subprocess.run(
        [str(python), "-c", "from importlib.metadata import version; print(version('vllm-router'))"],
        check=False,
        capture_output=True,
        text=True,
        env=router_env(),
        timeout=60,
    )
    if proc.returncode != 0:
        raise RuntimeError("cannot read vllm-router's version:\n%s" % proc.stderr[-2000:])
    return proc.stdout.strip()


# --------------------------------------------------------------------------
# proxy: the argparse calls of its source
# --------------------------------------------------------------------------
def proxy_flags_from_source(text):
    """``{option: value kind}`` from the ``add_argument`` calls of an argparse script (read, not run)."""
    flags = {"-h": "none", "--help": "none"}
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument":
            continue
        options = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        options = [o for o in options if o.startswith("-")]
        if not options:
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        action = keywords.get("action")
        action = action.value if isinstance(action, ast.Constant) else action
        nargs = keywords.get("nargs")
        nargs = nargs.value if isinstance(nargs, ast.Constant) else nargs
        if action in ("store_true", "store_false", "store_const", "count", "help", "version") or nargs == 0:
            kind = "none"
        elif nargs in ("?", "*"):
            kind = "optional"
        elif action is None or isinstance(action, str):
            kind = "required"
        else:
            raise RuntimeError("add_argument(%s) has an action this reader does not know" % ", ".join(options))
        for option in options:
            flags[option] = kind
    return dict(sorted(flags.items()))


def proxy_data(source_text, commit):
    return {
        "header": {
            "program": "proxy",
            "command": "python load_balance_proxy_server_example.py",
            "version": commit,
            "generated_by": GENERATOR + " --proxy-source FILE --proxy-commit SHA",
            "source": (
                "the parse_args() of %s in %s at commit %s (read as syntax: a plain argparse.ArgumentParser)"
                % (PROXY_UPSTREAM["path"], PROXY_UPSTREAM["repository"], commit)
            ),
            "upstream": dict(PROXY_UPSTREAM, commit=commit),
            # A plain argparse.ArgumentParser: no underscore spelling; it completes unique prefixes.
            "underscores": False,
            "abbreviations": True,
            "rewrites": {},
            "dotted_keys": [],
        },
        "flags": proxy_flags_from_source(source_text),
    }


def check_form(data, program):
    """Problems with the form of one data file (the checker relies on it)."""
    problems = []
    header = data.get("header") if isinstance(data, dict) else None
    flags = data.get("flags") if isinstance(data, dict) else None
    if not isinstance(header, dict) or header.get("program") != program:
        problems.append("%s: header.program is not %r" % (program, program))
    elif not header.get("version"):
        problems.append("%s: header.version is missing" % program)
    if not isinstance(flags, dict) or not flags:
        problems.append("%s: flags must be a non-empty mapping" % program)
    else:
        for option, kind in flags.items():
            if not isinstance(option, str) or not option.startswith("-") or kind not in VALUE_KINDS:
                problems.append("%s: bad entry %r: %r" % (program, option, kind))
    return problems


# --------------------------------------------------------------------------
def main(arguments=None):
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0], allow_abbrev=False)
    cli.add_argument("--check", action="store_true", help="compare with the committed data; exit 1 if it differs")
    cli.add_argument("--only", choices=PROGRAMS, action="append", help="only this program (repeatable)")
    cli.add_argument("--vllm-python", default=str(VLLM_PYTHON), help="Python of the vLLM venv")
    cli.add_argument("--router", default=str(ROUTER_BIN), help="the vllm-router program")
    cli.add_argument("--proxy-source", help="a copy of the proxy's upstream source file, to read its flags again")
    cli.add_argument("--proxy-commit", help="the upstream commit that --proxy-source is at")
    cli.add_argument("--data-dir", default=str(DATA_DIR), help="where the data files are (default: %(default)s)")
    options = cli.parse_args(arguments)
    if options.proxy_source and not options.proxy_commit:
        cli.error("--proxy-source needs --proxy-commit")
    programs = options.only or list(PROGRAMS)

    status = 0
    for program in programs:
        path = data_path(program, options.data_dir)
        committed_text = path.read_text(encoding="utf-8") if path.exists() else None
        if program == "vllm":
            fresh = vllm_data(options.vllm_python)
        elif program == "vllm-router":
            fresh = router_data(options.router)
        elif options.proxy_source:
            fresh = proxy_data(Path(options.proxy_source).read_text(encoding="utf-8"), options.proxy_commit)
        else:
            status |= keep_committed(program, path, committed_text)
            continue
        problems = check_form(fresh, program)
        if problems:
            raise RuntimeError("\n".join(problems))
        status |= write_or_compare(program, path, committed_text, fresh, options.check)
    return status


def keep_committed(program, path, committed_text):
    """Nothing to run: keep the committed data, check its form. 1 on a problem."""
    if committed_text is None:
        print("%s: %s is missing (give --proxy-source)" % (program, path), file=sys.stderr)
        return 1
    try:
        problems = check_form(json.loads(committed_text), program)
    except json.JSONDecodeError as exc:
        problems = ["%s: %s is not JSON: %s" % (program, shown(path), exc)]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print("%s: %s kept (read from its upstream source; --proxy-source to read it again)" % (program, shown(path)))
    return 0


def write_or_compare(program, path, committed_text, fresh, check):
    """Write the fresh data (or, with ``check``, compare it with the committed); 1 when it differs."""
    fresh_text = dump(fresh)
    if check and fresh_text != committed_text:
        print("%s: %s differs from the real program:" % (program, shown(path)), file=sys.stderr)
        diff = difflib.unified_diff(
            (committed_text or "").splitlines(), fresh_text.splitlines(), "committed", "generated", lineterm=""
        )
        for line in list(diff)[:200]:
            print(line, file=sys.stderr)
        return 1
    if check:
        print("%s: %s is up to date (%d flags)" % (program, shown(path), len(fresh["flags"])))
    elif fresh_text != committed_text:
        path.write_text(fresh_text, encoding="utf-8")
        print("%s: wrote %s (%d flags)" % (program, shown(path), len(fresh["flags"])))
    else:
        print("%s: %s unchanged" % (program, shown(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
