"""Write a tiny Llama 3.2 checkpoint and an instruct dataset, offline, for fine-tuning tests.

    python3 examples/llm/tiny_llama.py DIRECTORY

makes ``DIRECTORY/model`` and ``DIRECTORY/dataset``:

- ``model/``: what a Hugging Face download of ``meta-llama/Llama-3.2-1B-Instruct`` holds and
  torchtune's ``llama3_2`` configs read (``config.json``, ``model.safetensors``,
  ``tokenizer.json``, ``original/tokenizer.model``), for a Llama 3.2 of a few hundred
  thousand parameters, randomly initialised (seeded, so every run writes the same bytes);
- ``original/tokenizer.model``: a tiktoken BPE file (base64 token, rank) whose merges are
  learned from the dataset below, so that the Llama 3 tokenizer loads it;
- ``tokenizer.json``: the special tokens (``added_tokens``, as Hugging Face writes them), with
  ids right after the BPE's, so that the model's vocabulary stays small. torchtune reads them
  with ``tokenizer.special_tokens_path=.../tokenizer.json`` (its default ids, 128000 and up,
  would need a 128256-row embedding);
- ``dataset/alpaca.json``: instruction/input/output records, alpaca's shape.

Only torch and safetensors are needed (the ``llm`` extra brings both). The model's shape is
in :data:`SHAPE`; :func:`overrides` gives the torchtune config overrides that build it.
"""

from __future__ import annotations

import base64
import collections
import itertools
import json
import random
import re
import sys
from pathlib import Path

BPE_VOCAB = 384  # 256 byte tokens, then merges learned from the dataset
SPECIAL_TOKENS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|step_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
    "<|image|>",
    "<|video|>",
)
SHAPE = {
    "vocab_size": BPE_VOCAB + len(SPECIAL_TOKENS),
    "num_layers": 2,
    "num_heads": 8,
    "num_kv_heads": 2,
    "embed_dim": 256,
    "intermediate_dim": 512,
    "max_seq_len": 512,
}
SEED = 0
# A cruder split than Llama 3's pattern (which needs the regex module): words with their
# leading space, runs of digits, runs of other characters.
WORDS = re.compile(r" ?[A-Za-z]+| ?[0-9]+| ?[^A-Za-z0-9\s]+|\s+")
COLOURS = ("red", "green", "blue", "yellow", "purple", "orange", "black", "white")
THINGS = ("apple", "river", "house", "cloud", "stone", "tree", "bird", "train")


def records(count: int = 128) -> list[dict[str, str]]:
    """Instructions whose answers follow from them, so that even a tiny model learns them.
    The whole question is in ``instruction`` (``input`` empty, as in many of alpaca's
    records), so torchtune's ``instruct_dataset`` with ``column_map={"input": "instruction"}``
    reads the same prompts as its ``alpaca_dataset``."""
    rng = random.Random(SEED)
    out = []
    for i in range(count):
        if i % 2 == 0:
            colour, thing = rng.choice(COLOURS), rng.choice(THINGS)
            question, answer = (
                f"Name the colour of a {colour} {thing}.",
                f"The {thing} is {colour}.",
            )
        else:
            a, b = rng.randint(1, 9), rng.randint(1, 9)
            question, answer = f"Add {a} and {b}.", f"{a} plus {b} is {a + b}."
        out.append({"instruction": question, "input": "", "output": answer})
    return out


def train_bpe(text: str, vocab_size: int) -> dict[bytes, int]:
    """Byte-pair merges learned from ``text``: every byte first, then each merge in the order
    found, which is the rank order tiktoken applies them in."""
    ranks = {bytes([i]): i for i in range(256)}
    words = collections.Counter(m.group().encode() for m in WORDS.finditer(text))
    pieces = {w: [bytes([b]) for b in w] for w in words}
    while len(ranks) < vocab_size:
        pairs: collections.Counter[tuple[bytes, bytes]] = collections.Counter()
        for word, parts in pieces.items():
            for pair in itertools.pairwise(parts):
                pairs[pair] += words[word]
        if not pairs:
            break
        (left, right), _ = max(pairs.items(), key=lambda item: (item[1], item[0]))
        merged = left + right
        ranks[merged] = len(ranks)
        for word, parts in pieces.items():
            joined, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and parts[i] == left and parts[i + 1] == right:
                    joined.append(merged)
                    i += 2
                else:
                    joined.append(parts[i])
                    i += 1
            pieces[word] = joined
    return ranks


def hf_state_dict(shape: dict[str, int]) -> dict[str, object]:
    """Random weights under Hugging Face's Llama names (embeddings tied: no ``lm_head``)."""
    import torch

    generator = torch.Generator().manual_seed(SEED)
    dim, heads, kv_heads = shape["embed_dim"], shape["num_heads"], shape["num_kv_heads"]
    head_dim, hidden = dim // heads, shape["intermediate_dim"]

    def weight(*size: int) -> torch.Tensor:
        return torch.randn(*size, generator=generator) * 0.02

    tensors = {"model.embed_tokens.weight": weight(shape["vocab_size"], dim)}
    for i in range(shape["num_layers"]):
        prefix = f"model.layers.{i}"
        tensors |= {
            f"{prefix}.self_attn.q_proj.weight": weight(heads * head_dim, dim),
            f"{prefix}.self_attn.k_proj.weight": weight(kv_heads * head_dim, dim),
            f"{prefix}.self_attn.v_proj.weight": weight(kv_heads * head_dim, dim),
            f"{prefix}.self_attn.o_proj.weight": weight(dim, heads * head_dim),
            f"{prefix}.mlp.gate_proj.weight": weight(hidden, dim),
            f"{prefix}.mlp.up_proj.weight": weight(hidden, dim),
            f"{prefix}.mlp.down_proj.weight": weight(dim, hidden),
            f"{prefix}.input_layernorm.weight": torch.ones(dim),
            f"{prefix}.post_attention_layernorm.weight": torch.ones(dim),
        }
    tensors["model.norm.weight"] = torch.ones(dim)
    return tensors


def hf_config(shape: dict[str, int]) -> dict[str, object]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": shape["vocab_size"],
        "hidden_size": shape["embed_dim"],
        "intermediate_size": shape["intermediate_dim"],
        "num_hidden_layers": shape["num_layers"],
        "num_attention_heads": shape["num_heads"],
        "num_key_value_heads": shape["num_kv_heads"],
        "head_dim": shape["embed_dim"] // shape["num_heads"],
        "max_position_embeddings": shape["max_seq_len"],
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "bos_token_id": BPE_VOCAB,
        "eos_token_id": BPE_VOCAB + 1,
    }


def write_model(directory: Path, text: str) -> None:
    from safetensors.torch import save_file

    (directory / "original").mkdir(parents=True, exist_ok=True)
    ranks = train_bpe(text, BPE_VOCAB)
    lines = [f"{base64.b64encode(token).decode()} {rank}" for token, rank in ranks.items()]
    (directory / "original" / "tokenizer.model").write_text("\n".join(lines) + "\n")
    added = [
        {"id": BPE_VOCAB + i, "content": token, "special": True}
        for i, token in enumerate(SPECIAL_TOKENS)
    ]
    (directory / "tokenizer.json").write_text(json.dumps({"added_tokens": added}, indent=1))
    (directory / "config.json").write_text(json.dumps(hf_config(SHAPE), indent=1))
    save_file(hf_state_dict(SHAPE), str(directory / "model.safetensors"), {"format": "pt"})


def write_dataset(directory: Path) -> list[dict[str, str]]:
    directory.mkdir(parents=True, exist_ok=True)
    data = records()
    (directory / "alpaca.json").write_text(json.dumps(data, indent=1))
    return data


def overrides(model_dir: str = "/workspace/model") -> list[str]:
    """torchtune config overrides that build this model from a ``llama3_2`` LoRA config."""
    shape = " ".join(f"model.{k}={v}" for k, v in SHAPE.items()).split()
    return [
        "model._component_=torchtune.models.llama3_2.lora_llama3_2",
        *shape,
        f"tokenizer.special_tokens_path={model_dir}/tokenizer.json",
        f"tokenizer.max_seq_len={SHAPE['max_seq_len']}",
    ]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    root = Path(argv[0])
    data = write_dataset(root / "dataset")
    text = "\n".join(" ".join(r.values()) for r in data)
    write_model(root / "model", text)
    print(f"wrote {root / 'model'} and {root / 'dataset' / 'alpaca.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
