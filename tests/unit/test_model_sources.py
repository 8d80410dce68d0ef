"""Where each checkpoint comes from (plugin_utils/operations/_model_sources.py: k3_model_weights_fetch
against the plan, the seed and the targets) and a folder checked against its publisher's hashes
(module_utils/checkpoint_files.py)."""

from __future__ import annotations

import hashlib
import json

import pytest
from conftest import example_plan

from ansible_collections.kimi_k3.serving.plugins.module_utils import checkpoint_files as files_
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _model_sources as sources

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def plans():
    return {name: example_plan(name) for name in ("a3-mixed-4node", "mi355x-tp8-dcp8", "nvidia-tp8", "nvidia-tep16")}


def test_the_ascend_seed_is_fetched_from_its_modelscope_repository_at_a_tag(plans):
    (out,) = sources.model_sources(plans["a3-mixed-4node"], {"model": {"revision": "v1.0"}})
    assert out == {
        "name": "model",
        "path": "/root/.cache/Kimi-K3-w4a8",
        "source": {"hub": "modelscope", "repo": "Eco-Tech/Kimi-K3-w4a8", "revision": "v1.0"},
        "token": "k3_model_weights_modelscope_token",
    }


def test_the_ascend_seed_names_no_draft_so_a_draft_to_fetch_needs_its_repository(plans):
    with pytest.raises(sources.ModelSourcesError) as found:
        sources.model_sources(plans["a3-mixed-4node"], {"draft": {"hub": "modelscope", "revision": "v1"}})
    assert "k3_model_weights_fetch.draft.repo: this profile's seed names no draft repository" in str(found.value)


def test_the_mi355x_seed_gives_both_repositories_and_the_plan_both_folders(plans):
    out = sources.model_sources(
        plans["mi355x-tp8-dcp8"], {"model": {"revision": COMMIT}, "draft": {"revision": COMMIT}}
    )
    assert out == [
        {
            "name": "draft",
            "path": "/models/Inferact-Kimi-K3-DSpark",
            "source": {"hub": "huggingface", "repo": "Inferact/Kimi-K3-DSpark", "revision": COMMIT},
            "token": "k3_model_weights_hf_token",
        },
        {
            "name": "model",
            "path": "/models/Kimi-K3",
            "source": {"hub": "huggingface", "repo": "moonshotai/Kimi-K3", "revision": COMMIT},
            "token": "k3_model_weights_hf_token",
        },
    ]


def test_a_mirror_endpoint_and_another_repository_are_taken_as_given(plans):
    given = {"repo": "site/Kimi-K3-copy", "revision": COMMIT, "endpoint": "https://hf-mirror.example.cn/"}
    (out,) = sources.model_sources(plans["mi355x-tp8-dcp8"], {"model": given})
    assert out["source"] == {
        "hub": "huggingface",
        "repo": "site/Kimi-K3-copy",
        "revision": COMMIT,
        "endpoint": "https://hf-mirror.example.cn",
    }


@pytest.mark.parametrize(
    ("fetch", "expected"),
    [
        # A branch moves: every node must hold one revision.
        ({"model": {"revision": "main"}}, "k3_model_weights_fetch.model.revision 'main': give a commit's 40"),
        ({"model": {}}, "k3_model_weights_fetch.model.revision: pin the revision to fetch"),
        ({"model": {"revision": COMMIT, "repo": "Kimi-K3"}}, "repo 'Kimi-K3': give the repository as owner/name"),
        ({"model": {"revision": COMMIT, "hub": "s4"}}, "k3_model_weights_fetch.model.hub 's4': one of"),
        (
            {"model": {"revision": COMMIT, "endpoint": "ftp://mirror"}},
            "endpoint 'ftp://mirror': give the mirror's address as http(s)://host[:port][/path]",
        ),
        ({"weights": {"revision": COMMIT}}, "k3_model_weights_fetch.weights: only model and draft"),
        (["model"], "k3_model_weights_fetch: a mapping of model and/or draft"),
    ],
)
def test_bad_sources_are_refused_naming_the_variable_and_the_fix(plans, fetch, expected):
    with pytest.raises(sources.ModelSourcesError) as found:
        sources.model_sources(plans["mi355x-tp8-dcp8"], fetch)
    assert expected in str(found.value)


def test_a_checkpoint_served_by_its_hub_name_needs_a_folder_to_be_fetched_into(plans):
    """The NVIDIA profiles' default serves the Hub repository by name (each engine would download it
    itself): fetching once and bringing it to every node needs a folder."""
    plan = plans["nvidia-tp8"]
    plan = dict(plan, parameters=dict(plan["parameters"], model_path="moonshotai/Kimi-K3"))
    with pytest.raises(sources.ModelSourcesError) as found:
        sources.model_sources(plan, {"model": {"revision": COMMIT}})
    assert "the plan's model_path is 'moonshotai/Kimi-K3', not a folder: set k3_model_path" in str(found.value)


def test_every_problem_is_named_at_once(plans):
    with pytest.raises(sources.ModelSourcesError) as found:
        sources.model_sources(plans["mi355x-tp8-dcp8"], {"model": {"revision": "v1"}, "draft": {"revision": "x"}})
    assert "model.revision 'v1'" in str(found.value) and "draft.revision 'x'" in str(found.value)


def test_a_profile_without_a_seed_repository_needs_one_from_the_inventory(monkeypatch, plans):
    plan = dict(plans["mi355x-tp8-dcp8"], platform=None)
    with pytest.raises(sources.ModelSourcesError) as found:
        sources.model_sources(plan, {"model": {"revision": COMMIT}})
    assert "k3_model_weights_fetch.model.repo: this profile's seed names no model repository" in str(found.value)


CHECKPOINTS = [
    {"name": "model", "path": "/m/K3", "source": {"repo": "a/b"}, "token": "t"},
    {"name": "draft", "path": "/m/D", "source": {"repo": "a/d"}, "token": "t"},
]


@pytest.mark.parametrize(
    ("holding", "seed", "expected"),
    [
        # Nobody has it: the first host fetches, every other host receives.
        ({}, None, [("h1", True, ["h2", "h3"]), ("h1", True, ["h2", "h3"])]),
        # A host that holds one is its seed; hosts that hold it receive nothing.
        (
            {"h2": [{"present": True}, {"present": False}], "h3": [{"present": True}, {"present": True}]},
            None,
            [("h2", False, ["h1"]), ("h3", False, ["h1", "h2"])],
        ),
        # Every host holds both: nothing moves (a re-run).
        ({h: [{"present": True}] * 2 for h in ("h1", "h2", "h3")}, None, [("h1", False, []), ("h1", False, [])]),
        # A chosen seed fetches even where another host holds it; that host is left alone.
        ({"h1": [{"present": True}] * 2}, "h3", [("h3", True, ["h2"]), ("h3", True, ["h2"])]),
    ],
)
def test_the_seed_is_a_host_that_holds_the_checkpoint_and_only_hosts_without_it_receive(holding, seed, expected):
    out = sources.fanout(CHECKPOINTS, holding, ["h1", "h2", "h3"], seed)
    assert [(o["seed"], o["fetch"], o["targets"]) for o in out] == expected


def test_a_seed_outside_the_run_is_refused():
    with pytest.raises(sources.ModelSourcesError, match="model_weights_seed 'h9': not one of the hosts of this run"):
        sources.fanout(CHECKPOINTS, {}, ["h1"], "h9")


def publish(folder, content):
    """Files and the publisher's list of them (weights by SHA-256, small files by Git blob id)."""
    listed = []
    for name, data in content.items():
        (folder / name).write_bytes(data)
        if name.endswith(".safetensors"):
            listed.append({"path": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        else:
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 - Git's blob id
            listed.append({"path": name, "size": len(data), "blob_id": blob})
    return listed


def test_a_folder_is_checked_file_by_file_against_the_publisher(tmp_path):
    listed = publish(tmp_path, {"config.json": b'{"a": 1}\n', "model.safetensors": b"\x01" * 4096})
    assert files_.problems(tmp_path, listed) == []
    (tmp_path / "model.safetensors").write_bytes(b"\x02" * 4096)
    (tmp_path / "config.json").write_bytes(b'{"a": 2}\n')
    found = files_.problems(tmp_path, listed + [{"path": "tokenizer.json", "size": 3, "blob_id": "0" * 40}])
    assert (
        found[0].startswith("config.json: Git blob id ") and "the publisher's is %s" % listed[0]["blob_id"] in found[0]
    )
    assert found[1].startswith("model.safetensors: SHA-256 ")
    assert found[2] == "tokenizer.json: missing"
    (tmp_path / "config.json").write_bytes(b"{}")
    assert files_.problem(tmp_path, listed[0]) == "config.json: 2 bytes, the publisher's has 9"


def test_the_stamp_is_hidden_and_a_rerun_trusts_it_while_every_file_has_its_size(tmp_path):
    listed = publish(tmp_path, {"config.json": b"{}", "model.safetensors": b"\x00" * 100})
    source = {"hub": "huggingface", "repo": "a/b", "revision": COMMIT}
    assert not files_.stamped(tmp_path, source)
    files_.write_stamp(tmp_path, source, listed)
    assert json.loads((tmp_path / files_.STAMP).read_text())["files"] == listed
    assert files_.stamped(tmp_path, source) and files_.stamped(tmp_path, source, listed)
    assert not files_.stamped(tmp_path, dict(source, revision="f" * 40))
    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 99)  # a truncated weight: fetched again
    assert not files_.stamped(tmp_path, source)


def test_a_verified_folder_takes_the_place_of_the_one_there(tmp_path):
    staged, dest = tmp_path / ".K3.k3-partial", tmp_path / "K3"
    staged.mkdir()
    dest.mkdir()
    (staged / "new").write_text("new")
    (dest / "old").write_text("old")
    files_.put_in_place(str(staged), str(dest))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["K3"] and (dest / "new").exists()
    assert files_.present_bytes(str(dest), [{"path": "new", "size": 3}, {"path": "gone", "size": 1}]) == 3


def test_a_web_server_or_a_bucket_takes_its_address_and_the_publishers_list_as_data(plans):
    given = {
        "model": {"hub": "url", "url": "https://files.site.example/Kimi-K3/", "files": "lists/k3.json"},
        "draft": {
            "hub": "s3",
            "url": "s3://models/DSpark",
            "endpoint": "https://s3.site.example:9000",
            "files": "d.json",
        },
    }
    draft, model = sources.model_sources(plans["mi355x-tp8-dcp8"], given)
    assert model["source"] == {
        "hub": "url",
        "url": "https://files.site.example/Kimi-K3",
        "files": "lists/k3.json",
        "revision": "",
    }
    assert model["token"] == "k3_model_weights_url_token"
    assert draft["source"]["endpoint"] == "https://s3.site.example:9000"
    assert draft["token"] == "k3_model_weights_s3_credentials"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            {"hub": "url", "url": "ftp://x/K3", "files": "k.json"},
            "url 'ftp://x/K3': give the folder's address as http(s)://",
        ),
        (
            {"hub": "s3", "url": "https://x/K3", "files": "k.json"},
            "url 'https://x/K3': give the folder's address as s3://bucket",
        ),
        ({"hub": "url", "url": "https://x/K3"}, "model.files: this source gives no hashes of its own"),
        ({"hub": "s3", "url": "s3://b/K3", "files": "k.json", "revision": "a b"}, "revision 'a b': give a label"),
    ],
)
def test_a_file_store_without_an_address_or_a_list_is_refused(plans, given, expected):
    with pytest.raises(sources.ModelSourcesError) as found:
        sources.model_sources(plans["mi355x-tp8-dcp8"], {"model": given})
    assert expected in str(found.value)


def test_the_publishers_list_is_taken_from_a_release_or_as_a_list_and_bad_entries_are_named():
    files = [
        {"path": "b.safetensors", "size": 3, "sha256": "a" * 64},
        {"path": "a.json", "size": 2, "blob_id": "b" * 40},
    ]
    release = [{"name": "draft", "files": []}, {"name": "model", "path": "/m", "source": {}, "files": files}]
    assert files_.published_list(release, "model") == sorted(files, key=lambda e: e["path"])
    assert files_.published_list(files, "model") == files_.published_list(release, "model")
    for bad, words in [
        ([{"path": "/etc/x", "size": 1, "sha256": "a" * 64}], "'/etc/x': give a relative path"),
        ([{"path": "x/../../y", "size": 1, "sha256": "a" * 64}], "give a relative path inside the checkpoint"),
        ([{"path": "x", "size": "1", "sha256": "a" * 64}], "x: size '1' is not a number of bytes"),
        ([{"path": "x", "size": 1, "sha256": "A" * 64}], "x: give its sha256"),
        ([{"path": "x", "size": 1}], "x: give its sha256"),
        (release[:1] + [{"name": "other", "files": files}], None),
        ({"files": files}, "give a list of files"),
    ]:
        with pytest.raises(ValueError, match=".") as found:
            files_.published_list(bad, "model")
        assert words is None or words in str(found.value)


def test_the_web_servers_token_goes_in_aria2cs_input_never_its_argv():
    from ansible_collections.kimi_k3.serving.plugins.module_utils import store_url

    files = [
        {"path": "a b.safetensors", "size": 3, "sha256": "a" * 64},
        {"path": "c.json", "size": 2, "blob_id": "b" * 40},
    ]
    text = store_url.input_text({"url": "https://f.example/K3"}, "tok-1", files)
    assert text.splitlines() == [
        "https://f.example/K3/a%20b.safetensors",
        "  out=a b.safetensors",
        "  checksum=sha-256=" + "a" * 64,
        "  header=Authorization: Bearer tok-1",
        "https://f.example/K3/c.json",
        "  out=c.json",
        "  header=Authorization: Bearer tok-1",
    ]
    assert not any("tok-1" in word for word in store_url.command("/m/.K3.k3-partial", 4))


def test_the_buckets_credentials_go_in_rclones_environment_and_its_ca_bundle_is_its_own_flag():
    from ansible_collections.kimi_k3.serving.plugins.module_utils import store_s3

    source = {"url": "s3://models/K3", "endpoint": "https://s3.site:9000"}
    keys = {"access_key_id": "AK", "secret_access_key": "SK"}
    env = store_s3.environment(source, keys, {"AWS_CA_BUNDLE": "/etc/ca.pem", "HTTPS_PROXY": "http://p:3128"})
    assert env["RCLONE_S3_ACCESS_KEY_ID"] == "AK" and env["RCLONE_S3_SECRET_ACCESS_KEY"] == "SK"
    assert env["RCLONE_S3_PROVIDER"] == "Other" and env["RCLONE_S3_ENDPOINT"] == "https://s3.site:9000"
    assert env["AWS_CA_BUNDLE"] == "" and env["RCLONE_CA_CERT"] == "/etc/ca.pem" and "HTTPS_PROXY" not in env
    own = store_s3.environment({"url": "s3://models/K3"}, None, {})
    assert own["RCLONE_S3_ENV_AUTH"] == "true" and own["RCLONE_S3_PROVIDER"] == "AWS"
    argv = store_s3.command(source, "/m/.K3.k3-partial", "/m/.K3.k3-partial/.cache/files.txt", 4)
    assert argv[1:4] == ["copy", ":s3:models/K3", "/m/.K3.k3-partial"] and not any("SK" in word for word in argv)
