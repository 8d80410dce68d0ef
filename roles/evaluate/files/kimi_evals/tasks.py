"""inspect-ai tasks of the Kimi-K3 accuracy procedure, each reading its dataset from a local path.

    inspect eval kimi_evals/tasks.py@ocrbench -T dataset=DIR --model openai-api/kimi/SERVED_NAME
    inspect eval kimi_evals/tasks.py@mmmu_pro -T dataset=DIR ...
    inspect eval kimi_evals/tasks.py@toolcall -T dataset=FILE.jsonl ...

Each task's generate config holds the specification's settings (temperature 1.0, top-p 1.0,
reasoning effort max, 16 connections, one epoch, the benchmark's max output tokens); the
command line overrides any of them. Scores are the accuracy over the samples; the model's
reasoning stays in the log next to its answer (``inspect view``). Layouts: see formats.py.
"""

from __future__ import annotations

import base64
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from inspect_ai import Task, task  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.model import (  # noqa: E402
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentImage,
    ContentText,
    GenerateConfig,
)
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr  # noqa: E402
from inspect_ai.solver import Generate, TaskState, generate, solver  # noqa: E402
from inspect_ai.tool import ToolCall, ToolDef, ToolParams  # noqa: E402

from kimi_evals import formats  # noqa: E402

# The specification's settings (section 7.1), per benchmark: max output tokens.
MAX_TOKENS = {"ocrbench": 8192, "mmmu_pro": 96000, "toolcall": 32768}
# MMMU Pro's vision prompt (chain of thought, the question and its options are in the image).
MMMU_PRO_PROMPT = (
    "Write out the multiple-choice question in the image and then solve it. The last line of your "
    "response should be of the following format: 'Answer: $LETTER' (without quotes) where LETTER is "
    "one of options. Think step by step before answering."
)


def _config(benchmark):
    return GenerateConfig(
        max_tokens=MAX_TOKENS[benchmark],
        temperature=1.0,
        top_p=1.0,
        reasoning_effort="max",
        max_connections=16,
    )


def _data_url(image):
    kind, value = image
    if kind == "path":
        with open(value, "rb") as handle:
            value = handle.read()
    if value[:8] == b"\x89PNG\r\n\x1a\n":
        mime = "image/png"
    elif value[:3] == b"\xff\xd8\xff":
        mime = "image/jpeg"
    elif value[:4] == b"RIFF" and value[8:12] == b"WEBP":
        mime = "image/webp"
    else:
        mime = "image/png"
    return "data:%s;base64,%s" % (mime, base64.b64encode(value).decode("ascii"))


# --------------------------------------------------------------------------------------------
# OCRBench
# --------------------------------------------------------------------------------------------
@scorer(metrics=[accuracy(), stderr()])
def ocrbench_match():
    """OCRBench's rule: correct when an answer is contained in the reply (see formats.ocrbench_correct)."""

    async def score(state: TaskState, target: Target) -> Score:
        reply = state.output.completion
        ok = formats.ocrbench_correct(reply, list(target.target), state.metadata.get("dataset", ""))
        return Score(value=CORRECT if ok else INCORRECT, answer=reply, explanation="answers: %s" % list(target.target))

    return score


@task
def ocrbench(dataset: str) -> Task:
    """OCRBench: an image and a question; the reply must contain one of the answers."""
    samples = [
        Sample(
            id=r["id"],
            input=[
                ChatMessageUser(content=[ContentImage(image=_data_url(r["image"])), ContentText(text=r["question"])])
            ],
            target=r["answers"],
            metadata={"dataset": r["dataset"], "type": r["type"]},
        )
        for r in formats.ocrbench_records(dataset)
    ]
    return Task(
        dataset=MemoryDataset(samples, name="ocrbench", location=dataset),
        solver=generate(),
        scorer=ocrbench_match(),
        config=_config("ocrbench"),
        epochs=1,
    )


# --------------------------------------------------------------------------------------------
# MMMU Pro (vision)
# --------------------------------------------------------------------------------------------
@scorer(metrics=[accuracy(), stderr()])
def option_letter():
    """The letter the reply chooses (formats.extract_letter) equals the answer."""

    async def score(state: TaskState, target: Target) -> Score:
        reply = state.output.completion
        letter = formats.extract_letter(reply, state.metadata.get("n_options", 10))
        ok = letter is not None and letter == target.text
        return Score(value=CORRECT if ok else INCORRECT, answer=letter or "", explanation=reply)

    return score


@task
def mmmu_pro(dataset: str) -> Task:
    """MMMU Pro, vision setting: a screenshot holding the question and up to ten options (A-J)."""
    samples = [
        Sample(
            id=r["id"],
            input=[
                ChatMessageUser(content=[ContentImage(image=_data_url(r["image"])), ContentText(text=MMMU_PRO_PROMPT)])
            ],
            target=r["answer"],
            metadata={"subject": r["subject"], "n_options": len(r["options"]), "options": r["options"]},
        )
        for r in formats.mmmu_pro_records(dataset)
    ]
    return Task(
        dataset=MemoryDataset(samples, name="mmmu_pro", location=dataset),
        solver=generate(),
        scorer=option_letter(),
        config=_config("mmmu_pro"),
        epochs=1,
    )


# --------------------------------------------------------------------------------------------
# ToolCall
# --------------------------------------------------------------------------------------------
def _messages(raw):
    out = []
    for message in raw:
        role, content = message.get("role"), message.get("content") or ""
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if role == "system":
            out.append(ChatMessageSystem(content=content))
        elif role == "user":
            out.append(ChatMessageUser(content=content))
        elif role == "assistant":
            calls = [
                ToolCall(
                    id=call.get("id") or "call_%d" % n,
                    function=call["function"]["name"],
                    arguments=formats._arguments(call["function"].get("arguments"), "assistant message"),
                )
                for n, call in enumerate(message.get("tool_calls") or [])
            ]
            out.append(ChatMessageAssistant(content=content, tool_calls=calls or None))
        elif role == "tool":
            out.append(ChatMessageTool(content=content, tool_call_id=message.get("tool_call_id")))
        else:
            raise formats.DatasetError("a message of unknown role %r" % role)
    return out


def _tool(spec):
    function = spec["function"]
    parameters = json.loads(json.dumps(function.get("parameters") or {"type": "object", "properties": {}}))
    for name, schema in (parameters.get("properties") or {}).items():
        schema.setdefault("description", name)  # inspect wants one; the dataset may have none

    async def never_run(**_kwargs):  # the benchmark scores the call, it does not execute it
        return ""

    return ToolDef(
        tool=never_run,
        name=function["name"],
        description=function.get("description") or function["name"],
        parameters=ToolParams.model_validate(parameters),
    ).as_tool()


@solver
def offer_tools(tool_choice: str = "auto"):
    """The sample's own tools, offered to the model for one turn (calls are scored, not run)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.tools = [_tool(spec) for spec in state.metadata.get("tools") or []]
        state.tool_choice = tool_choice
        return await generate(state, tool_calls="none")

    return solve


@scorer(metrics=[accuracy(), stderr()])
def tool_call_match():
    """The reply's tool calls equal the expected ones (names and arguments, in order)."""

    async def score(state: TaskState, target: Target) -> Score:
        expected = state.metadata.get("expected") or []
        calls = [{"name": c.function, "arguments": c.arguments} for c in state.output.message.tool_calls or []]
        ok = formats.toolcall_correct(calls, expected)
        return Score(
            value=CORRECT if ok else INCORRECT,
            answer=json.dumps(calls, sort_keys=True),
            explanation="expected %s" % json.dumps(expected, sort_keys=True),
        )

    return score


@task
def toolcall(dataset: str, tool_choice: str = "auto") -> Task:
    """ToolCall: a conversation and its tools; the model's tool call must be the expected one."""
    samples = [
        Sample(
            id=r["id"],
            input=_messages(r["messages"]),
            target=json.dumps(r["expected"], sort_keys=True),
            metadata={"tools": r["tools"], "expected": r["expected"]},
        )
        for r in formats.toolcall_records(dataset)
    ]
    return Task(
        dataset=MemoryDataset(samples, name="toolcall", location=dataset),
        solver=offer_tools(tool_choice),
        scorer=tool_call_match(),
        config=_config("toolcall"),
        epochs=1,
    )
