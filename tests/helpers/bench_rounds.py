"""Rounds of the real ``vllm bench serve``, one after the other in one process, until a file appears.

Run with the vLLM venv's Python: ``python bench_rounds.py STOP_FILE <the arguments of vllm bench
serve>``. Each round is ``vllm.benchmarks.serve.main`` (what ``vllm bench serve`` runs) with the
parsed arguments, its seed the round's number and its result saved as ``round-NNN.json`` in the
result folder; a round that raises leaves ``round-NNN.error`` with the exception instead. vLLM is
imported once, so the load goes on between rounds instead of pausing while a new process imports it.
"""

from __future__ import annotations

import copy
import os
import sys
import traceback

from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser


def rounds(stop, argv):
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args(argv)
    index = 0
    while not os.path.exists(stop):
        one = copy.copy(args)
        one.seed = index
        one.result_filename = "round-%03d.json" % index
        try:
            main(one)
        except Exception:  # noqa: BLE001 - a failed round is reported, and the load goes on
            with open(os.path.join(args.result_dir, "round-%03d.error" % index), "w") as out:
                out.write(traceback.format_exc())
        index += 1


if __name__ == "__main__":
    rounds(sys.argv[1], sys.argv[2:])
