"""Build a tiny random-weight multimodal model (BLIP-2: a ViT, a Q-Former, an OPT decoder) that the
real vLLM CPU build serves with images, offline and deterministically.

    .venv/vllm/bin/python tools/tiny_vlm.py OUTDIR

For the accuracy evaluation's tests (OCRBench and MMMU Pro send images; vLLM refuses them for the
text-only tiny Llama of tools/tiny_model.py, which the sandbox deployment keeps using). BLIP-2
because vLLM 0.32's module for it imports without torchvision (the CPU venv has none: PyPI's
builds are CUDA ones); LLaVA, PaliGemma, Qwen2-VL, Idefics3 ... reach torchvision through
vLLM's Pixtral import. Vision: 28x28 images, patch 14, hidden 32, one layer; Q-Former one layer,
4 query tokens (the image takes 4 prompt tokens); OPT: hidden 64, 2 layers, 2 heads (head size 32,
which vLLM's CPU attention supports). The tokenizer is tools/tiny_model.py's (trained here) plus
an <image> token; ChatML chat template; weights in safetensors. Idempotent like tiny_model.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tiny_model  # noqa: E402

STAMP = ".k3-tiny-vlm"
SEED = 1234
IMAGE = {"image_size": 28, "patch_size": 14}
VISION = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, **IMAGE}
QFORMER = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2}
TEXT = {"hidden_size": 64, "ffn_dim": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "word_embed_proj_dim": 64}
NUM_QUERY_TOKENS = 4
RECIPE = json.dumps(
    {
        "v": 1,
        "seed": SEED,
        "vision": VISION,
        "qformer": QFORMER,
        "text": TEXT,
        "q": NUM_QUERY_TOKENS,
        "tokenizer": tiny_model.RECIPE_HASH,
    },
    sort_keys=True,
)
RECIPE_HASH = hashlib.sha256(RECIPE.encode()).hexdigest()[:16]


def build_processor():
    from transformers import Blip2Processor, BlipImageProcessor

    tokenizer = tiny_model.build_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    images = BlipImageProcessor(size={"height": IMAGE["image_size"], "width": IMAGE["image_size"]})
    return Blip2Processor(
        image_processor=images,
        tokenizer=tokenizer,
        num_query_tokens=NUM_QUERY_TOKENS,
        chat_template=tiny_model.CHAT_TEMPLATE,
    )


def build_model(tokenizer):
    import torch
    from transformers import (
        Blip2Config,
        Blip2ForConditionalGeneration,
        Blip2QFormerConfig,
        Blip2VisionConfig,
        OPTConfig,
    )

    text = OPTConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **TEXT,
    )
    qformer = Blip2QFormerConfig(encoder_hidden_size=VISION["hidden_size"], vocab_size=len(tokenizer), **QFORMER)
    config = Blip2Config(
        vision_config=Blip2VisionConfig(**VISION).to_dict(),
        qformer_config=qformer.to_dict(),
        text_config=text.to_dict(),
        num_query_tokens=NUM_QUERY_TOKENS,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
    )
    torch.manual_seed(SEED)
    model = Blip2ForConditionalGeneration(config).eval()
    with torch.no_grad():
        gen = torch.Generator().manual_seed(SEED)
        for _unused, param in sorted(model.named_parameters()):
            if param.dim() > 1:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.02)
    return model


def is_complete(outdir: Path) -> bool:
    stamp = outdir / STAMP
    return stamp.is_file() and stamp.read_text().strip() == RECIPE_HASH


def build(outdir: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=".%s.tmp-" % outdir.name, dir=outdir.parent))
    try:
        processor = build_processor()
        model = build_model(processor.tokenizer)
        model.save_pretrained(tmp, safe_serialization=True)
        processor.save_pretrained(tmp)
        (tmp / STAMP).write_text(RECIPE_HASH + "\n")
        tmp.chmod(0o755)
        for f in tmp.iterdir():
            f.chmod(0o644)
        if outdir.exists():
            shutil.rmtree(outdir)
        tmp.rename(outdir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: tiny_vlm.py OUTDIR", file=sys.stderr)
        return 2
    outdir = Path(argv[0]).absolute()
    if is_complete(outdir):
        print("tiny vlm: %s already complete" % outdir)
        return 0
    start = time.monotonic()
    outdir.parent.mkdir(parents=True, exist_ok=True)
    build(outdir)
    print("tiny vlm: built %s in %.1fs" % (outdir, time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
