"""Check `vllm serve` command lines against vLLM's REAL argument parser, without an engine.

Run it with the vLLM test venv (tools/venvs.sh vllm):

    .venv/vllm/bin/python tests/contract/argcheck.py CASES.json   # or "-" for stdin

CASES.json is a list of {"id": str, "argv": ["vllm", "serve", MODEL, "--flag", ...]}.
Every argv goes through exactly what `vllm serve` does before it builds an engine:
vLLM's FlexibleArgumentParser with the serve subcommand's arguments, parse_args,
validate_parsed_serve_args and AsyncEngineArgs.from_cli_args. Nothing is loaded and
nothing is contacted. The parser is made strict (a subclass of FlexibleArgumentParser):
a unique prefix of an option (`--tensor-parallel` for `--tensor-parallel-size`, `-t` for
`-tp`) is refused, although the real CLI takes it, so commands spell options in full.
Likewise `--additional-config` must be a JSON object (vLLM keeps a text that does not look
like `{...}`, e.g. a truncated object, as a plain string).
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
import shutil
import sys
import tempfile
from typing import Any


class InputError(Exception):
    """The cases document itself is malformed (exit status 2)."""


def _load_cases(source: str) -> list[dict[str, Any]]:
    text = sys.stdin.read() if source == "-" else pathlib.Path(source).read_text(encoding="utf-8")
    try:
        cases = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not JSON: {exc}") from exc
    if not isinstance(cases, list):
        raise InputError(f"{source}: expected a JSON list of cases")
    seen: set[str] = set()
    for index, case in enumerate(cases):
        where = f"{source}: case {index}"
        if not isinstance(case, dict) or set(case) != {"id", "argv"}:
            raise InputError(f'{where}: expected exactly the keys "id" and "argv"')
        if not isinstance(case["id"], str) or not case["id"]:
            raise InputError(f"{where}: id must be a non-empty string")
        if case["id"] in seen:
            raise InputError(f"{where}: duplicate id {case['id']!r}")
        seen.add(case["id"])
        argv = case["argv"]
        if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
            raise InputError(f"{where} ({case['id']}): argv must be a list of strings")
        if argv[:2] != ["vllm", "serve"]:
            raise InputError(f'{where} ({case["id"]}): argv must start with "vllm", "serve"')
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
    # Online (the default), AsyncEngineArgs.from_cli_args only builds a dataclass and contacts
    # nothing. With HF_HUB_OFFLINE=1 (left over from a serving test, say) it resolves a model
    # name that is not a local folder through the HF cache and fails: LocalEntryNotFoundError.
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

        class StrictParser(FlexibleArgumentParser):
            """vLLM's parser, refusing abbreviated options.

            allow_abbrev=False stops argparse completing a prefix of a `--long` option, but
            argparse still completes single-dash ones (`-t` to `-tp`): of the candidates
            argparse finds, keep only a one-letter option with its value attached (`-qfp8`).
            Everything else (underscores, `--json.key value`, `-O3`) is vLLM's own code.
            """

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                kwargs["allow_abbrev"] = False
                super().__init__(*args, **kwargs)

            def _get_option_tuples(self, option_string: str) -> list[tuple[Any, str, str | None]]:
                found = super()._get_option_tuples(option_string)
                return [match for match in found if match[1] == option_string[:2]]

        self._parser_class = StrictParser
        self._serve = ServeSubcommand()
        self._validate = validate_parsed_serve_args
        self._engine_args = AsyncEngineArgs

    def build(self) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
        """A fresh parser per argv: argparse actions may keep state between parses."""
        parser = self._parser_class(prog="vllm")
        # The serve parser is made by subparsers.add_parser(), as the class of its parent.
        subparsers = parser.add_subparsers(dest="subparser")
        serve_parser = self._serve.subparser_init(subparsers)
        if not isinstance(serve_parser, self._parser_class) or serve_parser.allow_abbrev:
            raise RuntimeError("vLLM's serve parser is not the strict parser: argcheck needs updating")
        return parser, serve_parser

    def option_strings(self) -> list[str]:
        return sorted(self.build()[1]._option_string_actions)

    def check(self, argv: list[str]) -> str | None:
        """None if vLLM accepts argv, else the error vLLM (or the strictness check) gives."""
        parser, _unused = self.build()
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
        except Exception as exc:  # vLLM raises ValueError, TypeError, pydantic errors ...
            return f"{type(exc).__name__}: {exc}"
        finally:
            self._parser_class._search_keyword = None  # class-level state set by --help=...
        if getattr(args, "subparser", None) != "serve":
            return "argv is not a `vllm serve` command"
        if isinstance(getattr(args, "additional_config", None), str):
            # vLLM json-parses --additional-config only when it looks like {...} and keeps any
            # other text as a plain string: a truncated JSON object would pass unnoticed.
            return f"--additional-config is not a JSON object: {args.additional_config!r}"
        try:
            self._validate(args)
            self._engine_args.from_cli_args(args)
        except Exception as exc:  # any exception is a refusal worth reporting
            return f"{type(exc).__name__}: {exc}"
        return None


def main(arguments: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0], allow_abbrev=False)
    cli.add_argument("cases", nargs="?", help='JSON file of {"id", "argv"} cases, or - for stdin')
    cli.add_argument(
        "--list-options", action="store_true", help="print every option string of `vllm serve`, one per line"
    )
    options = cli.parse_args(arguments)
    if options.cases is None and not options.list_options:
        cli.error("give a cases file (or -), or --list-options")
    try:
        cases = _load_cases(options.cases) if options.cases else []
    except (InputError, OSError) as exc:
        print(f"argcheck: {exc}", file=sys.stderr)
        return 2

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
