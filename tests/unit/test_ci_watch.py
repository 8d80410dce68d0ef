"""tools/ci_watch.py: the running tests from the progress lines, and a run stopped at its budget."""

from __future__ import annotations

import subprocess
import sys
import time

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import ci_watch  # noqa: E402


def test_running_lists_the_tests_started_and_not_ended_longest_first():
    lines = [
        "100 start a.py::one",
        "101 start b.py::two",
        "130 end a.py::one",
        "140 start c.py::three",
        "150 failed c.py::three (call, 9 s)",
    ]
    assert ci_watch.running(lines, 200.0) == [(99.0, "b.py::two"), (60.0, "c.py::three")]


def test_a_run_past_its_budget_is_stopped_saying_what_ran(tmp_path):
    progress = tmp_path / "progress.log"
    progress.write_text("%d start tests/x.py::slow\n" % time.time())
    slow = subprocess.Popen(["sleep", "60"], start_new_session=True)
    watch = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "ci_watch.py"), str(slow.pid), str(progress), "1", "600"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert slow.wait(timeout=10) == -15  # SIGTERM to its process group
    assert watch.returncode == 3
    assert "still running after its budget of 1 s; stopped it" in watch.stdout
    assert "running for" in watch.stdout and "tests/x.py::slow" in watch.stdout
    assert "sleep 60" in watch.stdout  # among the longest-running commands


def test_the_summary_ranks_tests_by_processor_time():
    lines = ["1 cpu 3.5 a.py::one", "2 cpu 90.0 b.py::two[x y]", "3 end b.py::two[x y]", "4 cpu 7.0 c.py::three"]
    assert ci_watch.heaviest(lines, 2) == [(90.0, "b.py::two[x y]"), (7.0, "c.py::three")]
    # The suite's processor time over each test is ranked apart from the test's own.
    lines += ["5 suitecpu 40.0 a.py::one", "6 suitecpu 12.5 c.py::three"]
    assert ci_watch.heaviest(lines, 1, "suitecpu") == [(40.0, "a.py::one")]
    assert ci_watch.heaviest(lines, 2) == [(90.0, "b.py::two[x y]"), (7.0, "c.py::three")]
