"""Compile caches: planned for every engine in a container, emptied on the host when the image changes.

The planner gives each NVIDIA and ROCm engine (runtime docker) its cache folder (the one its container
mounts at /kimi-k3-cache) keyed on its image; service_units (module_utils/compile_caches.py) empties a
folder whose stamp names another image, keeps and stamps one without a stamp, and does nothing in
check mode but say so.
"""

from __future__ import annotations

import copy

import pytest
from conftest import EXAMPLES, example_names, inventory_input

from ansible_collections.kimi_k3.serving.plugins.module_utils import compile_caches
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _unit_files as unit_files
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _units as units
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner

SETTINGS = {"config_dir": "/etc/kimi-k3", "state_dir": "/var/lib/kimi-k3", "path": [], "extra_env": {}}
SETTINGS.update(limits={}, docker="/usr/bin/docker")


def plan_of(name, **hostvars):
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / name / "hosts.yml")))
    for host in inv["hostvars"].values():
        host.update(hostvars)
    return planner.build_plan(inv)


@pytest.mark.parametrize("name", example_names())
def test_every_engine_in_a_container_has_its_mounted_cache_keyed_on_its_image(name):
    plan = plan_of(name)
    for host, entry in plan["hosts"].items():
        for svc in entry["services"]:
            if svc["kind"] != "vllm" or plan["platform"] == "ascend":
                assert "caches" not in svc, (host, svc["name"])
                continue
            (cache,) = svc["caches"]
            assert cache == {"path": "/var/cache/kimi-k3/%s" % svc["name"], "key": svc["image"]}
            assert "%s:/kimi-k3-cache" % cache["path"] in svc["container"]["volumes"]
            files = unit_files.service_files([svc], SETTINGS)
            assert files["caches"] == [dict(cache, service=svc["name"])]
            assert cache["path"] in units.service_paths([svc], "/etc/kimi-k3", "/var/lib/kimi-k3")


def test_an_engine_on_the_host_runtime_has_no_cache_to_key():
    plan = plan_of("nvidia-tp8", k3_runtime="host")
    engines = [s for e in plan["hosts"].values() for s in e["services"] if s["kind"] == "vllm"]
    assert engines and all("caches" not in s for s in engines)


def fill(path, key=None):
    (path / "inductor" / "fx").mkdir(parents=True)
    (path / "inductor" / "fx" / "graph.py").write_text("x" * 1000)
    (path / "vllm.json").write_text("{}")
    if key is not None:
        (path / compile_caches.STAMP).write_text(key + "\n")


def test_a_cache_of_another_image_is_emptied_and_stamped(tmp_path):
    cache = tmp_path / "decode"
    fill(cache, "vllm/vllm-openai:v0.31.0")
    wanted = [{"path": str(cache), "key": "vllm/vllm-openai:v0.32.0", "service": "decode"}]
    changed, cleared = compile_caches.apply_caches(wanted, check=True)
    assert changed == [str(cache)] and (cache / "vllm.json").exists()  # check mode: said, not done
    assert cleared == [
        {
            "service": "decode",
            "path": str(cache),
            "was": "vllm/vllm-openai:v0.31.0",
            "now": "vllm/vllm-openai:v0.32.0",
            "bytes": 1002 + len("vllm/vllm-openai:v0.31.0\n"),
        }
    ]
    changed, cleared = compile_caches.apply_caches(wanted, check=False)
    assert changed == [str(cache)] and cleared[0]["was"] == "vllm/vllm-openai:v0.31.0"
    assert sorted(p.name for p in cache.iterdir()) == [compile_caches.STAMP]
    assert (cache / compile_caches.STAMP).read_text() == "vllm/vllm-openai:v0.32.0\n"
    # The same image again: nothing to do.
    assert compile_caches.apply_caches(wanted, check=False) == ([], [])


def test_a_cache_without_a_stamp_is_kept_and_a_missing_one_made(tmp_path):
    old = tmp_path / "prefill"
    fill(old)
    new = tmp_path / "new" / "decode"
    wanted = [
        {"path": str(old), "key": "img:1", "service": "prefill"},
        {"path": str(new), "key": "img:1", "service": "decode"},
    ]
    changed, cleared = compile_caches.apply_caches(wanted, check=False)
    assert changed == [str(old), str(new)] and cleared == []
    assert (old / "inductor" / "fx" / "graph.py").exists()
    assert (old / compile_caches.STAMP).read_text() == (new / compile_caches.STAMP).read_text() == "img:1\n"
    assert oct(new.stat().st_mode & 0o777) == "0o755"
