"""Build a tiny random-weight Llama that the real vLLM serves on a CPU, offline and deterministically.

    .venv/vllm/bin/python tools/tiny_model.py OUTDIR

hidden 64, 2 layers, 2 attention heads (head size 32, which vLLM's CPU attention supports),
a byte-level BPE tokenizer of ~1000 tokens trained here with `tokenizers` on generated text,
a ChatML chat template in tokenizer_config.json, weights in safetensors. Same files every run
(fixed seeds). Idempotent: OUTDIR holding the stamp file (written last) is left as it is.
Its answers are gibberish (random weights): it exists to exercise serving, not quality.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

# Nothing is fetched: the tokenizer is trained here and the weights are random.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

STAMP = ".k3-tiny-model"
SEED = 1234
VOCAB_SIZE = 1000
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<pad>", "<|im_start|>", "<|im_end|>"]
MODEL = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
}
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# Bump when the recipe changes: a stamp of another recipe means "rebuild".
RECIPE = json.dumps({"v": 1, "seed": SEED, "vocab": VOCAB_SIZE, "model": MODEL, "chat": CHAT_TEMPLATE}, sort_keys=True)
RECIPE_HASH = hashlib.sha256(RECIPE.encode()).hexdigest()[:16]

WORDS = (
    "the a an one two three model server token request answer question cluster node host engine "
    "router cache prefill decode stream batch queue memory weight layer head vector matrix expert "
    "fast slow small large quiet busy ready healthy green red blue open closed first last next "
    "is are was were runs serves sends reads writes waits starts stops answers routes splits joins "
    "and or but so then when while because if with without over under into from to of in on at "
    "hello hi thanks please yes no maybe today tomorrow now later here there every each some many "
    "kimi vllm gpu cpu rack port address shared folder text chat user assistant system "
    "alpha beta gamma delta north south east west morning evening winter summer river mountain "
    "careful quickly slowly together apart always never often rarely number letter window door"
).split()


def corpus(n_lines: int) -> list[str]:
    """Deterministic sentences, chat-shaped lines and numbers for the tokenizer to learn from."""
    rng = random.Random(SEED)
    lines = []
    for i in range(n_lines):
        words = [rng.choice(WORDS) for _unused in range(rng.randint(4, 14))]
        sentence = " ".join(words).capitalize() + rng.choice([".", "?", "!", ","])
        if i % 5 == 0:
            sentence = "<|im_start|>%s\n%s<|im_end|>" % (rng.choice(["user", "assistant", "system"]), sentence)
        if i % 7 == 0:
            sentence += " %d %d.%d" % (rng.randint(0, 9999), rng.randint(0, 99), rng.randint(0, 9))
        lines.append(sentence)
    return lines


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(20000), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="<|im_end|>",
        pad_token="<pad>",
        chat_template=CHAT_TEMPLATE,
        model_max_length=MODEL["max_position_embeddings"],
        clean_up_tokenization_spaces=False,
    )


def build_model(tokenizer):
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        dtype="float32",
        **MODEL,
    )
    model = LlamaForCausalLM(config).eval()
    # Small, fixed weights: the default init is seeded too, but this keeps logits tame.
    with torch.no_grad():
        gen = torch.Generator().manual_seed(SEED)
        for _unused, param in sorted(model.named_parameters()):
            if param.dim() > 1:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.02)
    model.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
        do_sample=False,
    )
    return model


def is_complete(outdir: Path) -> bool:
    stamp = outdir / STAMP
    return stamp.is_file() and stamp.read_text().strip() == RECIPE_HASH


def build(outdir: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=".%s.tmp-" % outdir.name, dir=outdir.parent))
    try:
        tokenizer = build_tokenizer()
        model = build_model(tokenizer)
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp, save_jinja_files=False)
        (tmp / STAMP).write_text(RECIPE_HASH + "\n")
        tmp.chmod(0o755)
        for f in tmp.iterdir():
            f.chmod(0o644)
        if not outdir.exists():
            tmp.rename(outdir)
            return
        # An incomplete OUTDIR: replace our files in it, the stamp last.
        (outdir / STAMP).unlink(missing_ok=True)
        for f in sorted(tmp.iterdir(), key=lambda p: p.name == STAMP):
            os.replace(f, outdir / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: tiny_model.py OUTDIR", file=sys.stderr)
        return 2
    outdir = Path(argv[0]).absolute()
    if is_complete(outdir):
        print("tiny model: %s already complete" % outdir)
        return 0
    start = time.monotonic()
    outdir.parent.mkdir(parents=True, exist_ok=True)
    build(outdir)
    print("tiny model: built %s in %.1fs" % (outdir, time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
