"""How far a transfer has come (module_utils/transfer_progress.py: bytes on disk, rate over the job,
time left, the progress log), what the role's progress loop watches for a seed's fetches and what
is kept with the release (plugin_utils/operations/_model_sources.py: transfer_watch, model_published)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.kimi_k3.serving.plugins.module_utils import transfer_progress as progress
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._model_sources import (
    model_published,
    transfer_watch,
)


def test_bytes_are_what_the_files_hold_on_disk_so_a_sparse_file_counts_what_was_written(tmp_path):
    assert progress.bytes_in(tmp_path / "not-yet") == 0
    (tmp_path / "a").write_bytes(b"x" * 8192)
    sparse = tmp_path / "sub" / "shard.safetensors"
    sparse.parent.mkdir()
    with sparse.open("wb") as handle:  # aria2c writes pieces at their offsets into a sparse file
        handle.truncate(64 * 1024 * 1024)
        handle.seek(32 * 1024 * 1024)
        handle.write(b"y" * 4096)
    assert 8192 + 4096 <= progress.bytes_in(tmp_path) < 8192 + 4096 + 128 * 1024
    (tmp_path / "tiny").write_bytes(b"z")  # one block allocated, one byte counted
    assert progress.bytes_in(tmp_path) - progress.bytes_in(tmp_path / "sub") == 8192 + 1


def test_the_rate_is_over_the_job_so_far_and_gives_the_time_left(tmp_path):
    log = str(tmp_path / "fanout" / "model.progress")
    assert progress.first_sample(log, "j1") is None
    first = progress.sample(None, "j1", 1000.0, 0, 2_000_000_000)
    assert first["rate"] is None and first["left"] is None
    progress.record(log, first)
    assert oct(os.stat(tmp_path / "fanout").st_mode & 0o777) == "0o700"
    progress.record(log, progress.sample(first, "j1", 1002.0, 100_000_000, 2_000_000_000))
    later = progress.sample(progress.first_sample(log, "j1"), "j1", 1010.0, 500_000_000, 2_000_000_000)
    assert later["rate"] == 50_000_000.0 and later["left"] == 30.0
    assert progress.line("model", later) == "model: 500.0 MB of 2.0 GB (25 %), 50.0 MB/s, 30 s left"
    # Another job's readings (an earlier run) do not count.
    assert progress.first_sample(log, "j2") is None
    assert [json.loads(x)["bytes"] for x in open(log)] == [0, 100_000_000]  # noqa: SIM115, PTH123


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(4.4, "4 s"), (61, "1 min 01 s"), (3 * 3600 + 7 * 60 + 30, "3 h 07 min")],
)
def test_time_left_in_words(seconds, text):
    assert progress.duration_text(seconds) == text


def test_no_progress_yet_shows_no_rate_and_a_finished_one_shows_all_of_it():
    stalled = progress.sample({"time": 10.0, "bytes": 5}, "j", 20.0, 5, 10)
    assert stalled["rate"] is None
    assert progress.line("draft", stalled) == "draft: 5 B of 10 B (50 %)"
    assert progress.line("draft", progress.sample(None, "j", 1.0, 1_400_000_000_000, 1_400_000_000_000)).startswith(
        "draft: 1.4 TB of 1.4 TB (100 %)"
    )


def test_a_seeds_background_fetches_are_watched_in_their_staging_folders():
    jobs = [
        {
            "ansible_job_id": "j123.45",
            "item": {"bytes": 1400, "files": [], "item": {"name": "model", "path": "/models/Kimi-K3/"}},
        }
    ]
    assert transfer_watch(jobs, "/var/lib/kimi-k3/fanout") == [
        {
            "name": "model",
            "job": "j123.45",
            "path": ["/models/.Kimi-K3.k3-partial"],
            "total": 1400,
            "log": "/var/lib/kimi-k3/fanout/model-fetch.progress",
        }
    ]
    assert transfer_watch(None, "/x") == []


def test_the_release_keeps_each_listed_checkpoint_with_its_publishers_files():
    checkpoints = [
        {"name": "model", "path": "/m", "source": {"hub": "modelscope"}, "seed": "n0", "fetch": False, "targets": []},
        {"name": "draft", "path": "/d", "source": {"hub": "huggingface"}, "seed": "n1", "fetch": True, "targets": []},
    ]
    listed = [
        {"skipped": True, "item": checkpoints[1]},
        {"item": checkpoints[0], "files": [{"path": "a", "size": 1, "sha256": "0" * 64}]},
    ]
    assert model_published(checkpoints, listed) == [
        {"name": "model", "path": "/m", "source": {"hub": "modelscope"}, "files": listed[1]["files"]}
    ]
