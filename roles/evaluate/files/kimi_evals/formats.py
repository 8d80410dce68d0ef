"""The benchmarks' datasets on disk, and their scoring rules: plain Python (pyarrow only for parquet).

Every reader takes a local path (sites are often air-gapped: nothing is fetched) and returns
plain records; ``tasks.py`` turns them into inspect samples. Layouts read:

OCRBench (echo840/OCRBench), either
  DIR/OCRBench.json        the original release: a JSON list of {"dataset_name", "id",
                           "image_path", "question", "answers" (a text or a list), "type"};
                           each image at DIR/OCRBench_Images/<image_path> (or DIR/<image_path>)
  DIR/data/test-*.parquet  the dataset hub's export (or DIR/*.parquet): columns "dataset",
                           "question", "question_type", "answer" (list), "image" ({"bytes", "path"})
MMMU Pro, vision setting (MMMU/MMMU_Pro, config "vision")
  DIR/vision/test-*.parquet  (or DIR/*.parquet, or the parquet file itself): columns "id",
                           "image" ({"bytes", "path"}: the screenshot holding question and options),
                           "options" (a Python-literal list text, or a list; up to ten), "answer"
                           (a letter A-J), "subject"
ToolCall (JSONL, one sample a line; the file itself or DIR/*.jsonl)
  {"id": "...", "messages": [OpenAI chat messages], "tools": [OpenAI tool definitions
   {"type": "function", "function": {"name", "description", "parameters"}}],
   "expected": [{"name": "...", "arguments": {...}}]}   ([] or null: no tool call expected)
"""

from __future__ import annotations

import ast
import glob
import json
import os
import re

BENCHMARKS = ("ocrbench", "mmmu_pro", "toolcall")
LETTERS = "ABCDEFGHIJ"


class DatasetError(ValueError):
    """A dataset that is missing or not in the expected layout; the message names the path."""


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------
def _parquet_rows(files):
    try:
        import pyarrow.parquet as pq
    except ImportError as err:  # pragma: no cover - the eval venv has pyarrow
        raise DatasetError("reading %s needs pyarrow (tools/venvs.sh eval installs it)" % files[0]) from err
    rows = []
    for name in files:
        rows.extend(pq.read_table(name).to_pylist())
    return rows


def _parquet_files(path, *subdirs):
    if os.path.isfile(path) and path.endswith(".parquet"):
        return [path]
    for sub in subdirs + ("",):
        found = sorted(glob.glob(os.path.join(path, sub, "*.parquet")))
        if found:
            return found
    return []


def _image(value, where):
    """("bytes", data) or ("path", file) from a parquet image cell, a path text or raw bytes."""
    if isinstance(value, dict):
        if value.get("bytes"):
            return ("bytes", value["bytes"])
        if value.get("path"):
            return ("path", value["path"])
    elif isinstance(value, (bytes, bytearray)):
        return ("bytes", bytes(value))
    elif isinstance(value, str) and value:
        return ("path", value)
    raise DatasetError("%s: no image" % where)


def _require_dir(path, benchmark):
    if not os.path.exists(path):
        raise DatasetError("%s dataset %s does not exist" % (benchmark, path))


def ocrbench_records(path):
    _require_dir(path, "OCRBench")
    index = os.path.join(path, "OCRBench.json")
    out = []
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as handle:
            items = json.load(handle)
        if not isinstance(items, list):
            raise DatasetError("%s is not a JSON list of questions" % index)
        for n, item in enumerate(items):
            where = "%s item %d" % (index, n)
            for key in ("image_path", "question", "answers"):
                if key not in item:
                    raise DatasetError("%s has no %r" % (where, key))
            image = None
            for base in (os.path.join(path, "OCRBench_Images"), path):
                candidate = os.path.join(base, item["image_path"])
                if os.path.isfile(candidate):
                    image = ("path", candidate)
                    break
            if image is None:
                raise DatasetError("%s: image %s not found under %s" % (where, item["image_path"], path))
            out.append(
                {
                    "id": str(item.get("id", n)),
                    "question": str(item["question"]),
                    "answers": _answers(item["answers"], where),
                    "dataset": str(item.get("dataset_name", "")),
                    "type": str(item.get("type", "")),
                    "image": image,
                }
            )
        return out
    files = _parquet_files(path, "data")
    if not files:
        raise DatasetError("OCRBench dataset %s has neither OCRBench.json nor parquet files (data/*.parquet)" % path)
    for n, row in enumerate(_parquet_rows(files)):
        where = "%s row %d" % (path, n)
        out.append(
            {
                "id": str(row.get("id", n)),
                "question": str(row["question"]),
                "answers": _answers(row["answer"], where),
                "dataset": str(row.get("dataset", "")),
                "type": str(row.get("question_type", "")),
                "image": _image(row.get("image"), where),
            }
        )
    return out


def _answers(value, where):
    answers = [value] if isinstance(value, str) else list(value or [])
    if not answers or not all(isinstance(a, str) and a.strip() for a in answers):
        raise DatasetError("%s: answers must be a non-empty text or list of texts, not %r" % (where, value))
    return answers


def mmmu_pro_records(path):
    _require_dir(path, "MMMU Pro")
    files = _parquet_files(path, "vision")
    if not files:
        raise DatasetError("MMMU Pro dataset %s has no parquet files (vision/*.parquet)" % path)
    out = []
    for n, row in enumerate(_parquet_rows(files)):
        where = "%s row %d" % (path, n)
        options = row.get("options")
        if isinstance(options, str):
            try:
                options = ast.literal_eval(options)
            except (ValueError, SyntaxError) as err:
                raise DatasetError("%s: options %r are not a list" % (where, options)) from err
        if not isinstance(options, (list, tuple)) or not 2 <= len(options) <= len(LETTERS):
            raise DatasetError("%s: options must be a list of 2 to 10 choices, not %r" % (where, options))
        answer = str(row.get("answer", "")).strip().upper()
        if len(answer) != 1 or answer not in LETTERS[: len(options)]:
            raise DatasetError(
                "%s: answer %r is not one of the letters of its %d options" % (where, answer, len(options))
            )
        out.append(
            {
                "id": str(row.get("id", n)),
                "options": [str(o) for o in options],
                "answer": answer,
                "subject": str(row.get("subject", "")),
                "image": _image(row.get("image"), where),
            }
        )
    return out


def toolcall_records(path):
    _require_dir(path, "ToolCall")
    files = [path] if os.path.isfile(path) else sorted(glob.glob(os.path.join(path, "*.jsonl")))
    if not files:
        raise DatasetError("ToolCall dataset %s has no .jsonl file" % path)
    out = []
    for name in files:
        with open(name, encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                where = "%s line %d" % (name, lineno)
                try:
                    item = json.loads(line)
                except ValueError as err:
                    raise DatasetError("%s is not JSON: %s" % (where, err)) from err
                messages = item.get("messages")
                if not isinstance(messages, list) or not messages:
                    raise DatasetError("%s has no messages" % where)
                tools = item.get("tools") or []
                for tool in tools:
                    if not isinstance(tool, dict) or not (tool.get("function") or {}).get("name"):
                        raise DatasetError("%s: a tool without function.name: %r" % (where, tool))
                expected = item.get("expected")
                expected = [] if expected is None else expected
                expected = [expected] if isinstance(expected, dict) else expected
                for call in expected:
                    if not isinstance(call, dict) or not call.get("name"):
                        raise DatasetError("%s: an expected call without a name: %r" % (where, call))
                out.append(
                    {
                        "id": str(item.get("id", "%s-%d" % (os.path.basename(name), lineno))),
                        "messages": messages,
                        "tools": tools,
                        "expected": [
                            {"name": c["name"], "arguments": _arguments(c.get("arguments"), where)} for c in expected
                        ],
                    }
                )
    if not out:
        raise DatasetError("ToolCall dataset %s holds no samples" % path)
    return out


def _arguments(value, where):
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as err:
            raise DatasetError("%s: arguments %r are not JSON" % (where, value)) from err
    if not isinstance(value, dict):
        raise DatasetError("%s: arguments must be a mapping, not %r" % (where, value))
    return value


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------
def ocrbench_correct(prediction, answers, dataset=""):
    """OCRBench's rule: an answer contained in the prediction; case-insensitive, except for
    handwritten math (HME100k), where all spaces are dropped and case is kept."""
    prediction = prediction or ""
    for answer in answers:
        if dataset == "HME100k":
            if answer.strip().replace("\n", " ").replace(" ", "") in prediction.strip().replace("\n", " ").replace(
                " ", ""
            ):
                return True
        elif answer.lower().strip().replace("\n", " ") in prediction.lower().strip().replace("\n", " "):
            return True
    return False


_ANSWER_LINE = re.compile(r"answer\s*[:：]\s*\**\s*\(?([A-J])\)?(?![A-Za-z])", re.IGNORECASE)
_PAREN = re.compile(r"\(([A-J])\)")


def extract_letter(text, n_options=10):
    """The chosen option letter: the last 'Answer: X', else the last '(X)', else a reply that is
    only a letter; None when there is none. Letters past the options count as none."""
    text = text or ""
    valid = LETTERS[:n_options]
    for pattern in (_ANSWER_LINE, _PAREN):
        found = [m.upper() for m in pattern.findall(text) if m.upper() in valid]
        if found:
            return found[-1]
    bare = text.strip().strip(".*() ")
    return bare.upper() if len(bare) == 1 and bare.upper() in valid else None


def toolcall_correct(calls, expected):
    """The model's tool calls ([{"name", "arguments"}], arguments parsed or JSON text) match the
    expected ones: the same number, in order, each with the same name and the same arguments."""
    got = []
    for call in calls or []:
        arguments = call.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return False
        got.append({"name": call.get("name"), "arguments": arguments or {}})
    if len(got) != len(expected):
        return False
    return all(g["name"] == e["name"] and g["arguments"] == e["arguments"] for g, e in zip(got, expected, strict=True))
