"""The service check before the benchmarks (section 7.2): the endpoint serves the model and honours
the parameters the benchmarks send. Python's standard library only; prints one JSON document.

    KIMI_BASE_URL=http://HOST:PORT/v1 KIMI_API_KEY=... python service_check.py --model NAME \\
        [--max-tokens 16] [--benchmark-max-tokens ocrbench=8192,...] [--image] [--require-reasoning] \\
        [--extra-body JSON] [--timeout 600]

Checks, each {"check", "ok", "detail"} (what any vLLM endpoint can show; the answers' quality is
what the benchmarks measure):
  models            GET /v1/models lists the served model name
  max_model_len     every benchmark's max output tokens fits the served max_model_len (when listed)
  sampling          a chat completion with temperature 1.0, top-p 1.0, reasoning_effort max and the
                    thinking switch is answered, within max_tokens
  max_tokens        max_tokens=1 gives at most one completion token (the limit is honoured)
  top_p_validated   top_p=1.5 is refused with 400 or 422 (the server reads top_p instead of dropping it)
  effort_validated  an unknown reasoning_effort is refused with 400 or 422 (the server reads it)
  stream            a streamed completion sends chunks, its usage and [DONE]
  tools             a request with tools and tool_choice auto is accepted (auto tool choice and a
                    tool-call parser are enabled)
  image             (--image) a request with an image is answered (the served model is multimodal)
  reasoning         (--require-reasoning) the answer carries the reasoning separately
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import urllib.error
import urllib.request

# An 8x8 RGB PNG.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC"
)
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def _request(base, key, path, body=None, timeout=600, stream=False):
    """(status, parsed JSON or None, raw text). Never raises for an HTTP status."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base.rstrip("/") + path, data=data, method="GET" if body is None else "POST")
    req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, text = resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        status, text = err.code, err.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as err:
        return 0, None, "%s%s unreachable: %s" % (base, path, getattr(err, "reason", err))
    if stream:
        return status, None, text
    try:
        return status, json.loads(text), text
    except ValueError:
        return status, None, text


def _usage_tokens(answer):
    return int(((answer or {}).get("usage") or {}).get("completion_tokens") or 0)


def _error(answer, text):
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        return str(answer["error"].get("message", ""))[:300]
    return (text or "")[:300]


# Judges: plain functions of what the endpoint answered.
def judge_models(status, answer, text, model):
    if status != 200 or not isinstance(answer, dict):
        return False, "GET /v1/models answered %s: %s" % (status, _error(answer, text)), None
    listed = [m.get("id") for m in answer.get("data") or [] if isinstance(m, dict)]
    if model not in listed:
        return False, "the endpoint lists %s, not %s" % (listed, model), None
    lens = [m.get("max_model_len") for m in answer["data"] if m.get("id") == model and m.get("max_model_len")]
    return True, "lists %s" % model, (int(lens[0]) if lens else None)


def judge_max_model_len(max_model_len, benchmark_tokens):
    if max_model_len is None:
        return True, "the endpoint does not list max_model_len: not checked"
    over = {b: n for b, n in sorted(benchmark_tokens.items()) if n >= max_model_len}
    if over:
        return (
            False,
            "max output tokens %s do not fit max_model_len %d (raise --max-model-len, or lower the tokens)"
            % (
                over,
                max_model_len,
            ),
        )
    return True, "max_model_len %d holds every benchmark's max output tokens" % max_model_len


def judge_completion(status, answer, text, max_tokens):
    if status != 200 or not isinstance(answer, dict) or not answer.get("choices"):
        return False, "answered %s: %s" % (status, _error(answer, text))
    used = _usage_tokens(answer)
    if used > max_tokens:
        return False, "%d completion tokens for max_tokens=%d" % (used, max_tokens)
    return True, "%d completion tokens (max_tokens=%d), finish_reason %s" % (
        used,
        max_tokens,
        answer["choices"][0].get("finish_reason"),
    )


def judge_refused(status, answer, text, what):
    # vLLM answers 400; vllm-router, which parses the request first, answers 422 (its validation).
    if status in (400, 422):
        return True, "refused: %s" % _error(answer, text)[:120]
    return False, "%s was not refused (status %s): the endpoint may drop the parameter" % (what, status)


def judge_stream(status, text, max_tokens):
    if status != 200:
        return False, "answered %s: %s" % (status, (text or "")[:300])
    chunks, usage, done = 0, None, False
    for line in (text or "").splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            done = True
            continue
        try:
            chunk = json.loads(payload)
        except ValueError:
            return False, "a chunk that is not JSON: %s" % payload[:120]
        chunks += 1
        usage = chunk.get("usage") or usage
    if not done or not chunks:
        return False, "no [DONE] or no chunks in the stream (%d chunks)" % chunks
    used = int((usage or {}).get("completion_tokens") or 0)
    if usage is None or used > max_tokens:
        return False, "the stream's usage is %s for max_tokens=%d" % (usage, max_tokens)
    return True, "%d chunks, %d completion tokens, [DONE]" % (chunks, used)


def judge_reasoning(answer):
    message = (((answer or {}).get("choices") or [{}])[0]).get("message") or {}
    reasoning = message.get("reasoning") or message.get("reasoning_content")
    if reasoning:
        return True, "%d characters of reasoning" % len(reasoning)
    return (
        False,
        "no reasoning in the answer: is the reasoning parser on (--reasoning-parser) and thinking switched on?",
    )


def run(base, key, args):
    """The checks of the service at ``base`` with ``key``; ``args``: the parsed command line (its
    benchmark_max_tokens a mapping, its extra_body the decoded JSON)."""
    model, max_tokens, timeout = args.model, args.max_tokens, args.timeout
    checks = []

    def add(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    status, answer, text = _request(base, key, "/models", timeout=timeout)
    ok, detail, max_model_len = judge_models(status, answer, text, model)
    add("models", ok, detail)
    if not ok:
        return checks
    add("max_model_len", *judge_max_model_len(max_model_len, args.benchmark_max_tokens))
    chat = {"model": model, "messages": [{"role": "user", "content": "What is 17 + 25?"}], "max_tokens": max_tokens}
    spec = dict(chat, temperature=1.0, top_p=1.0, reasoning_effort="max", **args.extra_body)
    status, answer, text = _request(base, key, "/chat/completions", spec, timeout)
    add("sampling", *judge_completion(status, answer, text, max_tokens))
    sampled = answer
    status, answer, text = _request(base, key, "/chat/completions", dict(chat, max_tokens=1), timeout)
    add("max_tokens", *judge_completion(status, answer, text, 1))
    status, answer, text = _request(base, key, "/chat/completions", dict(chat, top_p=1.5), timeout)
    add("top_p_validated", *judge_refused(status, answer, text, "top_p=1.5"))
    status, answer, text = _request(
        base, key, "/chat/completions", dict(chat, reasoning_effort="not-an-effort"), timeout
    )
    add("effort_validated", *judge_refused(status, answer, text, "reasoning_effort=not-an-effort"))
    stream = dict(spec, stream=True, stream_options={"include_usage": True})
    status, _answer, text = _request(base, key, "/chat/completions", stream, timeout, stream=True)
    add("stream", *judge_stream(status, text, max_tokens))
    status, answer, text = _request(
        base, key, "/chat/completions", dict(chat, tools=[TOOL], tool_choice="auto"), timeout
    )
    add("tools", *judge_completion(status, answer, text, max_tokens))
    if args.image:
        url = "data:image/png;base64," + base64.b64encode(PIXEL_PNG).decode()
        content = [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "Describe the image."}]
        body = dict(chat, messages=[{"role": "user", "content": content}])
        status, answer, text = _request(base, key, "/chat/completions", body, timeout)
        add("image", *judge_completion(status, answer, text, max_tokens))
    if args.require_reasoning:
        add("reasoning", *judge_reasoning(sampled))
    return checks


def _pairs(text):
    out = {}
    for item in filter(None, (text or "").split(",")):
        name, _unused, value = item.partition("=")
        out[name] = int(value)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--model", required=True)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--benchmark-max-tokens", default="")
    parser.add_argument("--image", action="store_true")
    parser.add_argument("--require-reasoning", action="store_true")
    parser.add_argument("--extra-body", default="{}")
    parser.add_argument("--timeout", type=int, default=600)
    args = parser.parse_args(argv)
    base = os.environ.get("KIMI_BASE_URL")
    if not base:
        parser.error("KIMI_BASE_URL is not set")
    args.benchmark_max_tokens = _pairs(args.benchmark_max_tokens)
    args.extra_body = json.loads(args.extra_body)
    checks = run(base, os.environ.get("KIMI_API_KEY", ""), args)
    print(json.dumps({"base_url": base, "checks": checks}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
