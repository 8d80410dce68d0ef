# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The requests of verify (its ``requests`` step), in one controller-side pass.

What a client does against the plan's endpoint: ``GET /v1/models`` lists the served model (retried
while the endpoint comes up), a chat completion returns tokens, an image request is answered where
the profile has vision, every data-parallel rank counts a request pinned to it with
``X-data-parallel-rank``, and for P/D the decode engines count the prompt's KV cache as received
through the connector (``source="external_kv_transfer"``) rather than computed
(``source="local_compute"``); right after a restart the first routed request can still miss the
transfer, so a second fresh prompt is tried before that check fails.

The HTTP client is a callable passed in (``fetch(method, url, body, headers, timeout)`` returning
``(status, text)``, raising ``OSError`` when nothing answers): the action plugin gives it Ansible's
``open_url`` with the CA file; the unit tests give it recorded answers. No result or message holds
the key: only the callable sees the headers.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability._metrics import metric_sum
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._rolling import listed_models

KV_SOURCES = ("external_kv_transfer", "local_compute")
RANK_COUNTER = "vllm:prompt_tokens_total"


class VerifyFailed(Exception):
    """A check that failed; the message names what failed and where to look (``status``: the HTTP
    status of the answer that failed it, when there was one)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


@dataclass
class Settings:
    """The role's request settings (verify_prompt, verify_max_tokens ...)."""

    prompt: str = "What is 17 + 25?"
    max_tokens: int = 64
    timeout: int = 600
    kv_context: str = "Prefill computes the KV cache of this prompt and decode must receive it through the connector."
    kv_repeat: int = 10
    image_url: str = ""
    models_tries: int = 10
    models_delay: float = 3.0
    # Seconds the chat completion is tried again while the endpoint answers 503: a router with no
    # available worker of a role (vllm-router counts a restarted worker back after two of its health
    # checks, 60 s apart by default).
    unavailable_wait: float = 180.0
    sleep: object = None  # time.sleep, or a stand-in in the tests
    fresh: object = None  # a fresh prompt prefix per try (random by default)


def _truncate(text, length=200):
    """Jinja's truncate: at most ``length`` characters, cut at a word, with "..."."""
    text = str(text)
    if len(text) <= length:
        return text
    cut = text[: length - 3].rsplit(" ", 1)[0]
    return cut + "..."


class Verifier:
    """One pass of the checks against ``endpoint`` (the plan's ``endpoint``) for ``checks`` (its ``verify``)."""

    def __init__(self, fetch, endpoint, checks, settings):
        self.fetch = fetch
        self.endpoint = endpoint
        self.url = endpoint["url"]
        self.checks = checks
        self.settings = settings
        self.lines = []

    def _json(self, method, url, body=None, headers=None):
        """The answer of ``url`` as JSON; a status other than 200 or no answer fails naming the URL."""
        try:
            status, text = self.fetch(method, url, body, headers or {}, self.settings.timeout)
        except OSError as exc:
            raise VerifyFailed("%s %s: no answer (%s)" % (method, url, exc)) from None
        if status != 200:
            raise VerifyFailed("%s %s answered %s: %s" % (method, url, status, _truncate(text, 300)), status)
        try:
            return json.loads(text)
        except ValueError:
            return text

    def _metrics(self, url):
        """The /metrics page of the server at ``url`` (Prometheus text)."""
        return self._json("GET", url + "/metrics")

    def _chat(self, url, content, max_tokens, headers=None):
        body = {
            "model": self.checks["served_model_name"],
            "messages": [{"role": "user", "content": content}],
            "max_tokens": max_tokens,
        }
        return self._json("POST", url, body, headers)

    def _retried(self, call, tries, retry_if):
        """``(answer, seconds waited, first failure)`` of ``call()``, tried up to ``tries`` times,
        ``models_delay`` seconds apart, while it fails in a way ``retry_if`` accepts."""
        waited, first, attempt = 0.0, None, 1
        while True:
            try:
                return call(), waited, first
            except VerifyFailed as exc:
                if attempt >= int(tries) or not retry_if(exc):
                    raise
                first = first or str(exc)
            attempt += 1
            self.settings.sleep(self.settings.models_delay)
            waited += float(self.settings.models_delay)

    def models(self):
        """/v1/models lists the served model; retried while the endpoint does not answer 200."""
        url = self.url + "/v1/models"
        answer, _waited, _first = self._retried(lambda: self._json("GET", url), self.settings.models_tries, bool)
        listed = listed_models(answer)
        name = self.checks["served_model_name"]
        if name not in listed:
            raise VerifyFailed(
                "%s on %s (%s) does not list %s; it lists %s"
                % (self.endpoint.get("service"), self.endpoint.get("host"), url, name, listed)
            )
        return listed

    def chat(self):
        """A chat completion returns tokens; the answer is shown."""
        url = self.url + "/v1/chat/completions"
        body = {
            "model": self.checks["served_model_name"],
            "messages": [{"role": "user", "content": self.settings.prompt}],
            "max_tokens": int(self.settings.max_tokens),
            "temperature": 0.6,
        }
        # Tried again while the endpoint answers 503 (no available worker yet), up to unavailable_wait.
        tries = 1 + int(float(self.settings.unavailable_wait) // float(self.settings.models_delay))
        answer, waited, first = self._retried(
            lambda: self._json("POST", url, body), tries, lambda exc: exc.status == 503
        )
        if waited:
            self.lines.append("%s was unavailable for %.0f s (%s), then answered" % (self.url, waited, first))
        try:
            choice = answer["choices"][0]
            tokens = int(answer["usage"]["completion_tokens"])
            message = choice["message"]
        except (TypeError, KeyError, IndexError, ValueError):
            tokens, message = 0, None
        if message is None or tokens <= 0:
            raise VerifyFailed("%s answered without a completion: %s" % (url, answer))
        content = json.dumps(_truncate(message.get("content") or ""))
        self.lines.append("%s answered %d tokens: %s" % (self.url, tokens, content))
        return tokens

    def _decode_counters(self, urls):
        texts = [self._metrics(u) for u in urls]
        counter = self.checks["kv_transfer"]["counter"]
        return {src: sum(metric_sum(t, counter, {"source": src}) for t in texts) for src in KV_SOURCES}

    def _kv_try(self):
        kv = self.checks["kv_transfer"]
        before = self._decode_counters(kv["decode"])
        fresh = self.settings.fresh() if self.settings.fresh else "Run %x. " % random.getrandbits(48)
        prompt = fresh + (self.settings.kv_context + " ") * int(self.settings.kv_repeat) + self.settings.prompt
        answer = self._chat(self.url + "/v1/chat/completions", prompt, 8)
        after = self._decode_counters(kv["decode"])
        prompt_tokens = int((answer.get("usage") or {}).get("prompt_tokens") or 0) if isinstance(answer, dict) else 0
        external = after["external_kv_transfer"] - before["external_kv_transfer"]
        local = after["local_compute"] - before["local_compute"]
        return {
            "prompt_tokens": prompt_tokens,
            "external": external,
            "local": local,
            "moved": external > 0 and local < prompt_tokens,
        }

    def kv_transfer(self):
        """Decode received the prompt's KV cache; a second fresh prompt when the first missed it."""
        result = self._kv_try()
        if not result["moved"]:
            result = self._kv_try()
        if not result["moved"]:
            raise VerifyFailed(
                "No KV cache moved from prefill to decode: for a %d-token prompt the decode engines (%s) received"
                " %s tokens through the KV connector and computed %s themselves. Look at the prefill and decode"
                " journals for KV transfer errors."
                % (
                    result["prompt_tokens"],
                    ", ".join(self.checks["kv_transfer"]["decode"]),
                    result["external"],
                    result["local"],
                )
            )
        self.lines.append(
            "KV cache moved: %s of %d prompt tokens arrived at decode through the KV connector; decode computed %s."
            % (result["external"], result["prompt_tokens"], result["local"])
        )
        return result

    def vision(self):
        """An image request is answered."""
        content = [
            {"type": "image_url", "image_url": {"url": self.settings.image_url}},
            {"type": "text", "text": "Describe the image."},
        ]
        self._chat(self.url + "/v1/chat/completions", content, int(self.settings.max_tokens))
        self.lines.append("%s answered an image request" % self.url)

    def dp_rank(self, pin, rank):
        """A request pinned to ``rank`` through node 0's API is counted by that rank's engine."""
        labels = {"engine": str(rank)}
        before = metric_sum(self._metrics(pin["url"]), RANK_COUNTER, labels)
        headers = {"X-data-parallel-rank": str(rank)}
        self._chat(pin["url"] + "/v1/chat/completions", self.settings.prompt, 8, headers)
        after = metric_sum(self._metrics(pin["url"]), RANK_COUNTER, labels)
        if after - before <= 0:
            raise VerifyFailed(
                '%s: a request pinned to data-parallel rank %s was not counted by engine %s (%s{engine="%s"} did not'
                " grow). The rank's engine may be down: look at the journal of the node that runs rank %s."
                % (pin["service"], rank, rank, RANK_COUNTER, rank, rank)
            )
        self.lines.append(
            "%s rank %s served a request pinned to it (X-data-parallel-rank: %s)" % (pin["service"], rank, rank)
        )

    def run(self):
        """Every check the plan asks for, in order; the first failure stops the pass."""
        result = {"models": self.models(), "completion_tokens": self.chat()}
        if self.checks.get("kv_transfer"):
            result["kv_transfer"] = self.kv_transfer()
        if self.checks.get("vision"):
            self.vision()
        ranks = []
        for pin in self.checks.get("dp_pinning") or ():
            for rank in pin.get("ranks") or ():
                self.dp_rank(pin, rank)
                ranks.append({"service": pin["service"], "rank": rank})
        result["dp_ranks"] = ranks
        return result


def verify_requests(fetch, endpoint, checks, settings):
    """Run every check; returns ``(result, lines, failure)``: ``failure`` is None or the message of the first."""
    verifier = Verifier(fetch, endpoint, checks, settings)
    try:
        result = verifier.run()
    except VerifyFailed as exc:
        return {}, verifier.lines, str(exc)
    return result, verifier.lines, None
