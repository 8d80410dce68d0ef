"""Rounds of the real ``vllm bench serve``, one after the other in one process, held and let go by files.

Run with the vLLM venv's Python: ``python bench_rounds.py CONTROL_DIR <the arguments of vllm bench
serve>``. Each round is ``vllm.benchmarks.serve.main`` (what ``vllm bench serve`` runs) with the
parsed arguments, its seed the round's number and its result saved as ``round-NNN.json`` in the
result folder; a round that raises leaves ``round-NNN.error`` with the exception instead. vLLM is
imported once, so the load goes on between rounds instead of pausing while a new process imports it.

In CONTROL_DIR: while a file ``hold`` exists no new round starts, and the process says so with a file
``held`` holding the number of the next round (removed when that round starts); a file ``stop`` ends
it after the running round.
"""

from __future__ import annotations

import copy
import os
import sys
import time
import traceback

from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser


def wait_while_held(control, index):
    """Until ``hold`` is gone (False) or ``stop`` appears (True), saying ``held`` meanwhile."""
    held = os.path.join(control, "held")
    while os.path.exists(os.path.join(control, "hold")):
        if os.path.exists(os.path.join(control, "stop")):
            return True
        if not os.path.exists(held):
            with open(held + ".tmp", "w") as out:
                out.write(str(index))
            os.replace(held + ".tmp", held)
        time.sleep(0.2)
    if os.path.exists(held):
        os.unlink(held)
    return os.path.exists(os.path.join(control, "stop"))


def rounds(control, argv):
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args(argv)
    index = 0
    while not wait_while_held(control, index):
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
