# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The commands of the benchmark's points: the exact argv of ``vllm bench serve`` and of AISBench,
the AISBench configuration file, and each point with what its load-generator host runs.

Load generators: AISBench (``ais_bench``, the specification's tool) for the specification's
scenarios and ``vllm bench serve`` for concurrency sweeps, each run through /usr/bin/env with every
proxy variable unset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import VLLM_RESULT, BenchmarkError

# Unset for every run (the specification: "Disable proxies before the test"), in every spelling.
PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
# The API key reaches the load generators in their environment, never in their argv:
# vllm bench serve reads OPENAI_API_KEY. AISBench reads its key from its configuration file only
# (a Python file it loads with mmengine's lazy imports, where os.environ cannot be called): the
# load-generator host gets a 0600 copy with the key, removed after the run; the run folder on the
# controller keeps the copy without it.
KEY_VARIABLE = "OPENAI_API_KEY"
AIS_CONFIG = "ais_bench_config.py"
AIS_WORK = "work"


@dataclass(frozen=True)
class VllmBenchOptions:
    """What a run of vllm bench serve may choose beside its point: ``seed`` of the random prompts
    and ``result_filename``, the file in the folder its result is saved to (the benchmark's points
    keep both defaults)."""

    seed: int = 0
    result_filename: str = VLLM_RESULT


def _unset_proxies():
    argv = ["/usr/bin/env"]
    for name in PROXY_VARIABLES:
        argv += ["-u", name]
    return argv


def vllm_bench_argv(point, tgt, venv, folder, *, options=None):
    """The argv of ``vllm bench serve`` for ``point`` (input_len, output_len, requests, concurrency,
    request_rate, 0: as fast as it can) against ``tgt`` (url, model, tokenizer), from ``venv``,
    saving its result in ``folder``; ``options`` (VllmBenchOptions): the seed and the result's file
    name."""
    options = options or VllmBenchOptions()
    rate = "inf" if not point["request_rate"] else "%g" % point["request_rate"]
    return _unset_proxies() + [
        os.path.join(venv, "bin", "vllm"),
        "bench",
        "serve",
        "--backend",
        "openai-chat",
        "--endpoint",
        "/v1/chat/completions",
        "--base-url",
        tgt["url"],
        "--model",
        tgt["model"],
        "--tokenizer",
        tgt["tokenizer"],
        "--dataset-name",
        "random",
        "--random-input-len",
        str(point["input_len"]),
        "--random-output-len",
        str(point["output_len"]),
        "--num-prompts",
        str(point["requests"]),
        "--max-concurrency",
        str(point["concurrency"]),
        "--request-rate",
        rate,
        "--ignore-eos",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--seed",
        str(options.seed),
        "--disable-tqdm",
        "--save-result",
        "--result-dir",
        folder,
        "--result-filename",
        options.result_filename,
    ]


_AIS_CONFIG = """# AISBench configuration of benchmark point {name} (kimi_k3.serving, playbooks/benchmark.yml).
# {description}
# {key_note}
from ais_bench.benchmark.calculators import DefaultPerfMetricCalculator
from ais_bench.benchmark.datasets import MATHEvaluator, SyntheticDataset, math_postprocess_v2
from ais_bench.benchmark.models import VLLMCustomAPIChat
from ais_bench.benchmark.openicl.icl_inferencer import GenInferencer
from ais_bench.benchmark.openicl.icl_prompt_template import PromptTemplate
from ais_bench.benchmark.openicl.icl_retriever import ZeroRetriever
from ais_bench.benchmark.summarizers import DefaultPerfSummarizer

models = [
    dict(
        attr="service",
        type=VLLMCustomAPIChat,
        abbr="kimi-k3",
        path={tokenizer!r},
        model={model!r},
        stream=True,
        request_rate={request_rate!r},
        use_timestamp=False,
        retry=2,
        api_key={api_key!r},
        host_ip={host!r},
        host_port={port!r},
        url={url!r},
        max_out_len={output_len!r},
        batch_size={concurrency!r},
        trust_remote_code=False,
        generation_kwargs=dict(temperature=0.01, ignore_eos=True),
    )
]
datasets = [
    dict(
        abbr={dataset!r},
        type=SyntheticDataset,
        config={{
            "Type": "tokenid",
            "RequestCount": {requests!r},
            "TrustRemoteCode": False,
            "TokenIdConfig": {{"RequestSize": {input_len!r}, "PrefixLen": {prefix_len!r}}},
        }},
        reader_cfg=dict(input_columns=["question"], output_column="answer"),
        infer_cfg=dict(
            prompt_template=dict(type=PromptTemplate, template="{{question}}"),
            retriever=dict(type=ZeroRetriever),
            inferencer=dict(type=GenInferencer),
        ),
        eval_cfg=dict(
            evaluator=dict(type=MATHEvaluator, version="v2"),
            pred_postprocessor=dict(type=math_postprocess_v2),
        ),
    )
]
summarizer = dict(
    attr="performance",
    type=DefaultPerfSummarizer,
    calculator=dict(
        type=DefaultPerfMetricCalculator,
        stats_list=["Average", "Min", "Max", "Median", "P75", "P90", "P99"],
    ),
)
"""


def ais_bench_config(point, tgt, api_key=""):
    """The AISBench configuration file of an ais_bench point (a Python file AISBench reads); the copy
    with ``api_key`` is for the load-generator host only (0600, removed after the run)."""
    parts = urlsplit(tgt["url"])
    port = parts.port or (443 if parts.scheme == "https" else 80)
    rate = point["request_rate"]
    return _AIS_CONFIG.format(
        name=point["name"],
        description=point.get("description", ""),
        key_note=(
            "The API key of the deployment: a 0600 file, removed after the run."
            if api_key
            else "No API key in this copy (the load-generator host's copy has the deployment's key, if any)."
        ),
        api_key=str(api_key or ""),
        tokenizer=tgt["tokenizer"],
        model=tgt["model"],
        request_rate=int(rate) if float(rate).is_integer() else rate,
        host=parts.hostname,
        port=port,
        url=tgt["url"],
        output_len=point["output_len"],
        concurrency=point["concurrency"],
        dataset=point["dataset_type"],
        requests=point["requests"],
        input_len=point["input_len"],
        prefix_len=point["prefix_len"],
    )


def ais_bench_argv(venv, folder):
    """The argv of an AISBench perf run of the configuration in ``folder``, from ``venv``."""
    return _unset_proxies() + [
        os.path.join(venv, "bin", "ais_bench"),
        os.path.join(folder, AIS_CONFIG),
        "--mode",
        "perf",
        "--work-dir",
        os.path.join(folder, AIS_WORK),
    ]


def commands(points, tgt, vllm_venv, ais_bench_venv, remote_dir):
    """Each point with what its load-generator host runs: ``dir`` (the point's folder there),
    ``argv`` and ``config`` (the AISBench file to write first, without the API key; None for
    vllm bench serve). After the run the host's copy of the config and AISBench's dump of it
    (``dir``/work/*/configs, which holds the key) are removed; every other file is fetched."""
    if not remote_dir or not str(remote_dir).startswith("/"):
        raise BenchmarkError("benchmark_remote_dir must be an absolute path, not %r" % (remote_dir,))
    out = []
    for point in points:
        folder = os.path.join(str(remote_dir), point["name"])
        if point["tool"] == "vllm_bench":
            extra = {"argv": vllm_bench_argv(point, tgt, vllm_venv, folder), "config": None}
        else:
            extra = {"argv": ais_bench_argv(ais_bench_venv, folder), "config": ais_bench_config(point, tgt)}
        out.append(dict(point, dir=folder, **extra))
    return out
