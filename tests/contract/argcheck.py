"""Check `vllm serve` command lines against vLLM's REAL argument parser, without an engine.

Run it with the vLLM test venv (tools/venvs.sh vllm):

    .venv/vllm/bin/python tests/contract/argcheck.py CASES.json   # or "-" for stdin

CASES.json is a list of {"id": str, "argv": ["vllm", "serve", MODEL, "--flag", ...]}.
Every argv goes through exactly what `vllm serve` does before it builds an engine:
vLLM's FlexibleArgumentParser with the serve subcommand's arguments, parse_args,
validate_parsed_serve_args and AsyncEngineArgs.from_cli_args. Nothing is loaded and
nothing is contacted. The parser is made strict: a unique prefix of an option
(`--tensor-parallel` for `--tensor-parallel-size`, `-t` for `-tp`) is refused, although
the real CLI would take it, so generated commands always spell options in full.
vLLM's own underscore spelling (`--safetensors_load_strategy`) stays accepted.

Prints [{"id", "ok", "error"}] as JSON on stdout (vLLM's logs go to stderr) and exits
0 if every argv is accepted, 1 if any is refused, 2 if the input itself is malformed.
All argv are checked in one process: importing vLLM takes several seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import re
import shutil
import sys
import tempfile
from typing import Any

# A short option with its value attached (`-O3`, `-Odecode`) is rewritten by vLLM itself.
_VLLM_REWRITTEN_SHORT = ("-O",)
_SHORT_OPTION = re.compile(r"^-[A-Za-z]")


def _load_cases(source: str) -> list[dict[str, Any]]:
    text = sys.stdin.read() if source == "-" else pathlib.Path(source).read_text(encoding="utf-8")
    try:
        cases = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"argcheck: {source}: not JSON: {exc}") from exc
    if not isinstance(cases, list):
        raise SystemExit(f"argcheck: {source}: expected a JSON list of cases")
    seen: set[str] = set()
    for index, case in enumerate(cases):
        where = f"argcheck: {source}: case {index}"
        if not isinstance(case, dict) or set(case) != {"id", "argv"}:
            raise SystemExit(f'{where}: expected exactly the keys "id" and "argv"')
        if not isinstance(case["id"], str) or not case["id"]:
            raise SystemExit(f"{where}: id must be a non-empty string")
        if case["id"] in seen:
            raise SystemExit(f"{where}: duplicate id {case['id']!r}")
        seen.add(case["id"])
        argv = case["argv"]
        if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
            raise SystemExit(f"{where} ({case['id']}): argv must be a list of strings")
        if argv[:2] != ["vllm", "serve"]:
            raise SystemExit(f'{where} ({case["id"]}): argv must start with "vllm", "serve"')
    return cases


def _isolate_environment(scratch: str) -> None:
    """Point every cache vLLM, torch and the HF libraries write to at our own scratch folder."""
    folders = {
        "TMPDIR": "tmp",
        "VLLM_CACHE_ROOT": "vllm-cache",
        "TORCHINDUCTOR_CACHE_DIR": "inductor-cache",
        "HF_HOME": "hf-home",
        "XDG_CACHE_HOME": "xdg-cache",
    }
    for variable, name in folders.items():
        path = os.path.join(scratch, name)
        os.makedirs(path, exist_ok=True)
        os.environ[variable] = path
    tempfile.tempdir = None  # re-read TMPDIR
    # AsyncEngineArgs.from_cli_args only builds a dataclass; HF_HUB_OFFLINE=1 is not needed
    # to keep it offline, and a leftover "1" from a serving test must not change behaviour.
    os.environ["HF_HUB_OFFLINE"] = "0"
    os.environ["VLLM_LOGGING_STREAM"] = "ext://sys.stderr"
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ["VLLM_NO_USAGE_STATS"] = "1"
    os.environ["DO_NOT_TRACK"] = "1"


class _Checker:
    """Builds vLLM's serve parser and checks one argv at a time."""

    def __init__(self) -> None:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.entrypoints.cli.serve import ServeSubcommand
        from vllm.entrypoints.launchers.cli_args import validate_parsed_serve_args
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        self._parser_class = FlexibleArgumentParser
        self._serve = ServeSubcommand()
        self._validate = validate_parsed_serve_args
        self._engine_args = AsyncEngineArgs

    def build(self) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
        """A fresh parser per argv: argparse actions may keep state between parses."""
        parser = self._parser_class(prog="vllm", allow_abbrev=False)
        subparsers = parser.add_subparsers(dest="subparser")
        serve_parser = self._serve.subparser_init(subparsers)
        # add_parser() does not pass allow_abbrev on; argparse reads the attribute at parse time.
        serve_parser.allow_abbrev = False
        return parser, serve_parser

    def option_strings(self) -> list[str]:
        return sorted(self.build()[1]._option_string_actions)

    @staticmethod
    def _short_option_error(argv: list[str], known: dict[str, Any]) -> str | None:
        """allow_abbrev=False covers `--long` options only; argparse still completes `-t` to `-tp`."""
        for token in argv[2:]:
            if not _SHORT_OPTION.match(token) or token.startswith(_VLLM_REWRITTEN_SHORT):
                continue
            key = token.split("=", 1)[0]
            if key in known or key[:2] in known:  # exact, or a one-letter option with its value attached
                continue
            matches = sorted(option for option in known if option.startswith(key) and not option.startswith("--"))
            hint = f" (an abbreviation of {', '.join(matches)})" if matches else ""
            return f"vllm serve: error: {key} is not an exact option string{hint}"
        return None

    def check(self, argv: list[str]) -> str | None:
        """None if vLLM accepts argv, else the error vLLM (or the strictness check) gives."""
        parser, serve_parser = self.build()
        error = self._short_option_error(argv, serve_parser._option_string_actions)
        if error:
            return error
        captured = io.StringIO()
        try:
            with contextlib.redirect_stderr(captured):
                args = parser.parse_args(argv[1:])
        except SystemExit as exc:
            text = captured.getvalue()
            marker = text.find(": error: ")
            if marker >= 0:
                start = text.rfind("\n", 0, marker) + 1
                return text[start:].strip()
            return text.strip() or f"the parser exited with status {exc.code} (asked for --help?)"
        except Exception as exc:  # noqa: BLE001 - vLLM raises ValueError, TypeError, pydantic errors ...
            return f"{type(exc).__name__}: {exc}"
        finally:
            self._parser_class._search_keyword = None  # class-level state set by --help=...
        if getattr(args, "subparser", None) != "serve":
            return "argv is not a `vllm serve` command"
        try:
            self._validate(args)
            self._engine_args.from_cli_args(args)
        except Exception as exc:  # noqa: BLE001 - any exception is a refusal worth reporting
            return f"{type(exc).__name__}: {exc}"
        return None


def main(arguments: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    cli.add_argument("cases", nargs="?", help='JSON file of {"id", "argv"} cases, or - for stdin')
    cli.add_argument(
        "--list-options", action="store_true", help="print every option string of `vllm serve`, one per line"
    )
    options = cli.parse_args(arguments)
    if options.cases is None and not options.list_options:
        cli.error("give a cases file (or -), or --list-options")
    cases = _load_cases(options.cases) if options.cases else []

    scratch = tempfile.mkdtemp(prefix="k3-argcheck-")
    # Keep stdout for our JSON only: everything else (vLLM's loggers, prints, native
    # libraries writing to fd 1) goes to stderr.
    sys.stdout.flush()
    result_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        _isolate_environment(scratch)
        checker = _Checker()
        if options.list_options:
            output = "".join(f"{option}\n" for option in checker.option_strings())
            status = 0
        else:
            results = []
            for case in cases:
                error = checker.check(case["argv"])
                results.append({"id": case["id"], "ok": error is None, "error": error})
            output = json.dumps(results, indent=2) + "\n"
            status = 0 if all(result["ok"] for result in results) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        shutil.rmtree(scratch, ignore_errors=True)
    with os.fdopen(result_fd, "w", encoding="utf-8") as out:
        out.write(output)
    return status


if __name__ == "__main__":
    sys.exit(main())
