"""Write small local datasets in the benchmarks' on-disk layouts, with images drawn here.

    .venv/eval/bin/python tools/eval_datasets.py OUTDIR

OUTDIR/ocrbench/OCRBench.json + OCRBench_Images/   (echo840/OCRBench's original layout)
OUTDIR/mmmu_pro/vision/test-00000-of-00001.parquet (MMMU/MMMU_Pro "vision": id, image, options, answer, subject)
OUTDIR/toolcall/toolcall_samples.jsonl             (messages, tools, expected calls)

A handful of items each (roles/evaluate/files/kimi_evals/formats.py documents the layouts); the
same bytes every run. It exists to run the real tasks end to end against a small model: the
answers are written so that a random-weight model cannot stumble on them (long codes).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from PIL import Image, ImageDraw

OCR_ITEMS = [
    # (dataset_name, type, text drawn, question, answers)
    ("IIIT5K", "Regular Text Recognition", "QUARTZLANTERN", "what is written in the image?", ["QUARTZLANTERN"]),
    ("SVT", "Irregular Text Recognition", "ZEPHYR 4718", "what is written in the image?", ["ZEPHYR 4718"]),
    ("docVQA", "Doc-oriented VQA", "Invoice No: KX-90213", "What is the invoice number?", ["KX-90213"]),
    (
        "HME100k",
        "Handwritten Mathematical Expression Recognition",
        "x^{2}+7y=31",
        "Write the expression in LaTeX.",
        ["x^{2}+7y=31"],
    ),
]
MMMU_ITEMS = [
    # (id, subject, question, ten options, answer)
    (
        "test_Physics_1",
        "Physics",
        "Which quantity is conserved in an elastic collision?",
        [
            "mass only",
            "kinetic energy",
            "temperature",
            "charge density",
            "pressure",
            "volume",
            "colour",
            "entropy only",
            "friction",
            "heat",
        ],
        "B",
    ),
    (
        "test_History_2",
        "History",
        "In which year did the Berlin Wall fall?",
        ["1945", "1961", "1975", "1989", "1991", "1999", "2001", "1968", "1953", "1983"],
        "D",
    ),
    (
        "test_Math_3",
        "Math",
        "What is 12 * 12?",
        ["124", "132", "144", "154", "112", "122", "142", "164", "148", "136"],
        "C",
    ),
    (
        "test_Biology_4",
        "Biology",
        "Which organelle makes ATP?",
        [
            "nucleus",
            "ribosome",
            "golgi",
            "lysosome",
            "vacuole",
            "membrane",
            "wall",
            "centriole",
            "chloroplast only",
            "mitochondrion",
        ],
        "J",
    ),
]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"],
        },
    },
}
FLIGHTS = {
    "type": "function",
    "function": {
        "name": "search_flights",
        "description": "Flights between two airports on a day",
        "parameters": {
            "type": "object",
            "properties": {"origin": {"type": "string"}, "destination": {"type": "string"}, "date": {"type": "string"}},
            "required": ["origin", "destination", "date"],
        },
    },
}
TOOL_ITEMS = [
    {
        "id": "weather-1",
        "messages": [{"role": "user", "content": "What is the weather in Reykjavik, in celsius?"}],
        "tools": [WEATHER],
        "expected": [{"name": "get_weather", "arguments": {"city": "Reykjavik", "unit": "celsius"}}],
    },
    {
        "id": "flights-1",
        "messages": [
            {"role": "system", "content": "You book travel."},
            {"role": "user", "content": "Find flights from OSL to NRT on 2031-04-02."},
        ],
        "tools": [WEATHER, FLIGHTS],
        "expected": [
            {"name": "search_flights", "arguments": {"origin": "OSL", "destination": "NRT", "date": "2031-04-02"}}
        ],
    },
    {
        "id": "followup-1",
        "messages": [
            {"role": "user", "content": "Weather in Lima?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Lima"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 19}'},
            {"role": "user", "content": "And in Quito?"},
        ],
        "tools": [WEATHER],
        "expected": [{"name": "get_weather", "arguments": {"city": "Quito"}}],
    },
    {
        "id": "no-call-1",
        "messages": [{"role": "user", "content": "Say hello, no tools needed."}],
        "tools": [WEATHER],
        "expected": [],
    },
]


def png(lines, size):
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    y = 6
    for line in lines:
        draw.text((6, y), line, fill="black")
        y += 14
    out = io.BytesIO()
    image.save(out, "PNG", optimize=False)
    return out.getvalue()


def write_ocrbench(root: Path):
    images = root / "OCRBench_Images"
    images.mkdir(parents=True, exist_ok=True)
    index = []
    for n, (dataset, kind, text, question, answers) in enumerate(OCR_ITEMS):
        rel = "%s/%d.png" % (dataset, n)
        (images / dataset).mkdir(exist_ok=True)
        (images / rel).write_bytes(png([text], (200, 32)))
        index.append(
            {
                "dataset_name": dataset,
                "id": n,
                "image_path": rel,
                "question": question,
                "answers": answers,
                "type": kind,
            }
        )
    (root / "OCRBench.json").write_text(json.dumps(index, indent=1) + "\n")


def write_mmmu_pro(root: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = {"id": [], "image": [], "options": [], "answer": [], "subject": []}
    for ident, subject, question, options, answer in MMMU_ITEMS:
        lines = [question] + ["(%s) %s" % ("ABCDEFGHIJ"[i], o) for i, o in enumerate(options)]
        rows["id"].append(ident)
        rows["image"].append({"bytes": png(lines, (320, 12 + 14 * len(lines))), "path": ident + ".png"})
        rows["options"].append(repr(options))  # the dataset keeps options as a Python-literal text
        rows["answer"].append(answer)
        rows["subject"].append(subject)
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            ("options", pa.string()),
            ("answer", pa.string()),
            ("subject", pa.string()),
        ]
    )
    (root / "vision").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(rows, schema=schema), root / "vision" / "test-00000-of-00001.parquet")


def write_toolcall(root: Path):
    root.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(item, sort_keys=True) + "\n" for item in TOOL_ITEMS)
    (root / "toolcall_samples.jsonl").write_text(text)


def main(argv):
    if len(argv) != 1:
        print("usage: eval_datasets.py OUTDIR", file=sys.stderr)
        return 2
    out = Path(argv[0]).absolute()
    write_ocrbench(out / "ocrbench")
    write_mmmu_pro(out / "mmmu_pro")
    write_toolcall(out / "toolcall")
    print(
        "eval datasets: %s (ocrbench %d, mmmu_pro %d, toolcall %d items)"
        % (out, len(OCR_ITEMS), len(MMMU_ITEMS), len(TOOL_ITEMS))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
