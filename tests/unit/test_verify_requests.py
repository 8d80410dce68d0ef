"""verify's requests in one pass (plugin_utils/operations/_verify_requests.py): what each answer must
hold, the retries, the second KV try, and messages that name what failed. The metrics pages are the
recorded /metrics of the real vLLM 0.32.0 CPU build (tests/unit/fixtures/metrics), with counters
moved the way a transfer moves them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._verify_requests import (
    Settings,
    verify_requests,
)

PAGE = (Path(__file__).parent / "fixtures" / "metrics" / "vllm-0.32.0-cpu.txt").read_text()
ENDPOINT = {"url": "https://10.77.0.11:8443", "service": "front-door", "host": "k3-sb-front"}
DECODE = "http://10.77.0.13:8200"
NODE0 = "http://10.77.0.14:8000"
CHECKS = {
    "served_model_name": "kimi-k3-sandbox",
    "vision": False,
    "dp_pinning": [],
    "kv_transfer": {"counter": "vllm:prompt_tokens_by_source_total", "decode": [DECODE]},
}


def page(**counters):
    """The recorded page with the named counters of engine 0 set (local, external, total)."""
    text = PAGE
    for source, key in (("local_compute", "local"), ("external_kv_transfer", "external")):
        if key in counters:
            text = re.sub(r'(source="%s"\}) \S+' % source, lambda m, v=counters[key]: "%s %s" % (m.group(1), v), text)
    if "total" in counters:
        text = re.sub(
            r'^(vllm:prompt_tokens_total\{engine="0"[^}]*\}) \S+', r"\g<1> %s" % counters["total"], text, flags=re.M
        )
    return text


CHAT = {"choices": [{"message": {"role": "assistant", "content": "42"}}], "usage": {"completion_tokens": 5}}


class Server:
    """Answers in order per (method, url); records what was sent."""

    def __init__(self, answers):
        self.answers = {k: list(v) for k, v in answers.items()}
        self.sent = []

    def __call__(self, method, url, body, headers, timeout):
        self.sent.append((method, url, body, dict(headers)))
        queue = self.answers.get((method, url))
        if not queue:
            raise OSError("connection refused")
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Exception):
            raise answer
        status, body_out = answer
        return status, body_out if isinstance(body_out, str) else json.dumps(body_out)


def settings(**kw):
    return Settings(sleep=lambda s: None, fresh=lambda: "Run 1. ", **kw)


def pd_server(kv_before, kv_after, models=((200, {"data": [{"id": "kimi-k3-sandbox"}]}),)):
    chat_url = ENDPOINT["url"] + "/v1/chat/completions"
    long_answer = {"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": 300, "completion_tokens": 8}}
    return Server(
        {
            ("GET", ENDPOINT["url"] + "/v1/models"): list(models),
            ("POST", chat_url): [(200, CHAT), (200, long_answer), (200, long_answer)],
            ("GET", DECODE + "/metrics"): [(200, p) for p in kv_before + kv_after],
        }
    )


def test_a_pd_deployment_that_moves_the_kv_cache_passes_and_says_so():
    server = pd_server([page(local=16, external=0)], [page(local=20, external=296)])
    result, lines, failure = verify_requests(server, ENDPOINT, CHECKS, settings())
    assert failure is None
    assert result["models"] == ["kimi-k3-sandbox"] and result["completion_tokens"] == 5
    assert result["kv_transfer"] == {"prompt_tokens": 300, "external": 296.0, "local": 4.0, "moved": True}
    assert lines == [
        'https://10.77.0.11:8443 answered 5 tokens: "42"',
        "KV cache moved: 296.0 of 300 prompt tokens arrived at decode through the KV connector; decode computed 4.0.",
    ]
    posts = [body for method, _url, body, _headers in server.sent if method == "POST"]
    long_prompt = posts[1]["messages"][0]["content"]
    assert long_prompt.startswith("Run 1. Prefill computes the KV cache") and long_prompt.endswith("What is 17 + 25?")


def test_a_first_prompt_that_missed_the_transfer_is_tried_once_more():
    before, missed, after = page(local=16, external=0), page(local=316, external=0), page(local=320, external=296)
    server = pd_server([before], [missed, missed, after])
    result, _lines, failure = verify_requests(server, ENDPOINT, CHECKS, settings())
    assert failure is None and result["kv_transfer"]["moved"]
    assert sum(1 for m, u, *_ in server.sent if m == "POST") == 3


def test_no_transfer_in_two_tries_fails_naming_the_decode_engines_and_the_counts():
    flat = page(local=16, external=0)
    grown = page(local=316, external=0)
    server = pd_server([flat], [grown, grown, page(local=616, external=0)])
    _result, _lines, failure = verify_requests(server, ENDPOINT, CHECKS, settings())
    assert failure == (
        "No KV cache moved from prefill to decode: for a 300-token prompt the decode engines (%s) received 0.0"
        " tokens through the KV connector and computed 300.0 themselves. Look at the prefill and decode journals"
        " for KV transfer errors." % DECODE
    )


def test_the_model_list_is_retried_while_the_endpoint_comes_up_then_must_name_the_model():
    models = [(503, "starting"), (503, "starting"), (200, {"models": ["other"]})]
    waits = []
    server = pd_server([], [], models=models)
    s = settings()
    s.sleep = waits.append
    _result, _lines, failure = verify_requests(server, ENDPOINT, CHECKS, s)
    assert waits == [3.0, 3.0]
    assert failure == (
        "front-door on k3-sb-front (https://10.77.0.11:8443/v1/models) does not list kimi-k3-sandbox;"
        " it lists ['other']"
    )


def test_an_endpoint_that_never_answers_fails_after_its_tries_naming_the_url():
    server = Server({})
    _result, _lines, failure = verify_requests(server, ENDPOINT, CHECKS, settings(models_tries=3))
    assert failure == "GET https://10.77.0.11:8443/v1/models: no answer (connection refused)"
    assert len(server.sent) == 3


@pytest.mark.parametrize(
    "answer, expected",
    [
        ((401, "Unauthorized"), "POST https://10.77.0.11:8443/v1/chat/completions answered 401: Unauthorized"),
        (
            (200, {"choices": [], "usage": {"completion_tokens": 0}}),
            "https://10.77.0.11:8443/v1/chat/completions answered without a completion: "
            "{'choices': [], 'usage': {'completion_tokens': 0}}",
        ),
    ],
)
def test_a_chat_without_a_completion_fails_naming_the_url(answer, expected):
    server = Server(
        {
            ("GET", ENDPOINT["url"] + "/v1/models"): [(200, {"data": [{"id": "kimi-k3-sandbox"}]})],
            ("POST", ENDPOINT["url"] + "/v1/chat/completions"): [answer],
        }
    )
    _result, lines, failure = verify_requests(server, ENDPOINT, CHECKS, settings())
    assert failure == expected and lines == []


def test_every_data_parallel_rank_is_pinned_and_a_rank_that_counts_nothing_is_named():
    checks = dict(
        CHECKS, kv_transfer=None, vision=True, dp_pinning=[{"service": "k3-sb-dp0/dp", "url": NODE0, "ranks": [0, 1]}]
    )
    rank1 = PAGE.replace('engine="0"', 'engine="1"')

    def both(r0, r1):
        """Node 0's page with rank 0's and rank 1's prompt-token counters."""
        return page(total=r0) + rank1.replace(
            'vllm:prompt_tokens_total{engine="1",model_name="kimi-k3-sandbox"} 16.0',
            'vllm:prompt_tokens_total{engine="1",model_name="kimi-k3-sandbox"} %s' % r1,
        )

    server = Server(
        {
            ("GET", ENDPOINT["url"] + "/v1/models"): [(200, {"data": [{"id": "kimi-k3-sandbox"}]})],
            ("POST", ENDPOINT["url"] + "/v1/chat/completions"): [(200, CHAT)],
            ("POST", NODE0 + "/v1/chat/completions"): [(200, CHAT)],
            # rank 0: 16 -> 30; rank 1: 16 -> 16 (its engine counted nothing)
            ("GET", NODE0 + "/metrics"): [
                (200, both(16, 16)),
                (200, both(30, 16)),
                (200, both(30, 16)),
                (200, both(30, 16)),
            ],
        }
    )
    result, lines, failure = verify_requests(server, ENDPOINT, checks, settings(image_url="data:image/png;base64,AA=="))
    pinned = [h.get("X-data-parallel-rank") for m, u, b, h in server.sent if u == NODE0 + "/v1/chat/completions"]
    assert pinned == ["0", "1"]
    image = [b for m, u, b, h in server.sent if m == "POST" and isinstance(b["messages"][0]["content"], list)]
    assert image[0]["messages"][0]["content"][0] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AA=="},
    }
    assert lines[-1] == "k3-sb-dp0/dp rank 0 served a request pinned to it (X-data-parallel-rank: 0)"
    assert failure.startswith(
        "k3-sb-dp0/dp: a request pinned to data-parallel rank 1 was not counted by engine 1"
        ' (vllm:prompt_tokens_total{engine="1"}'
    )


def test_the_key_is_in_no_result_or_message():
    from ansible_collections.kimi_k3.serving.plugins.action.verify_requests import http_fetch

    key = "sk-k3-test-never-shown"
    server = Server({("GET", ENDPOINT["url"] + "/v1/models"): [(401, "Unauthorized")]})
    result, lines, failure = verify_requests(server, ENDPOINT, CHECKS, settings(models_tries=1))
    assert key not in json.dumps([result, lines, failure])
    # The real client puts it in the Authorization header only: refused at once by a closed port.
    fetch = http_fetch(key, "")
    with pytest.raises(OSError):
        fetch("GET", "http://127.0.0.1:9/v1/models", None, {}, 2)


def test_a_chat_answered_503_is_tried_again_while_the_router_has_no_worker_then_says_so():
    chat_url = ENDPOINT["url"] + "/v1/chat/completions"
    busy = (503, "No available workers: 1 prefill, 0 decode")
    server = Server(
        {
            ("GET", ENDPOINT["url"] + "/v1/models"): [(200, {"data": [{"id": "kimi-k3-sandbox"}]})],
            ("POST", chat_url): [busy, busy, (200, CHAT)],
        }
    )
    waits = []
    s = settings()
    s.sleep = waits.append
    result, lines, failure = verify_requests(server, ENDPOINT, dict(CHECKS, kv_transfer=None), s)
    assert failure is None and result["completion_tokens"] == 5 and waits == [3.0, 3.0]
    assert lines[0] == (
        "https://10.77.0.11:8443 was unavailable for 6 s (POST %s answered 503: No available workers: 1 prefill,"
        " 0 decode), then answered" % chat_url
    )


def test_a_chat_still_answered_503_after_the_wait_fails_and_another_status_at_once():
    chat_url = ENDPOINT["url"] + "/v1/chat/completions"
    models = [(200, {"data": [{"id": "kimi-k3-sandbox"}]})]
    server = Server({("GET", ENDPOINT["url"] + "/v1/models"): models, ("POST", chat_url): [(503, "no workers")]})
    _result, _lines, failure = verify_requests(server, ENDPOINT, CHECKS, settings(unavailable_wait=9))
    assert failure == "POST %s answered 503: no workers" % chat_url
    assert sum(1 for m, *_ in server.sent if m == "POST") == 4  # at once, then after 3, 6 and 9 s
    server = Server({("GET", ENDPOINT["url"] + "/v1/models"): models, ("POST", chat_url): [(500, "boom")]})
    _result, _lines, failure = verify_requests(server, ENDPOINT, CHECKS, settings())
    assert failure == "POST %s answered 500: boom" % chat_url
    assert sum(1 for m, *_ in server.sent if m == "POST") == 1
