"""A tiny Llama, its tokenizer and an instruct dataset, made offline for fine-tuning tests:
no weights can be downloaded here, so the tests make what a Hugging Face download of a Llama
model and of an alpaca-shaped dataset would hold.

- ``model/``: ``config.json``, ``model.safetensors`` (a ``LlamaForCausalLM`` of two layers and
  64 dimensions, randomly initialised from a fixed seed: about 400 kB) and a byte-level BPE
  tokenizer learned from the dataset (``tokenizer.json``, ``tokenizer_config.json``), as
  ``transformers`` saves them;
- ``dataset/alpaca.json``: instruction/input/output records whose answers follow from the
  question, so that even this model's loss falls within a few steps.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

SEED = 0
SPECIAL = ("<|begin_of_text|>", "<|end_of_text|>", "<|pad|>")
SHAPE = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
}


def records(count: int = 64) -> list[dict[str, str]]:
    """The example's instruct records (examples/llm/tiny_llama.py), fewer of them."""
    return _example().records(count)


def _example() -> Any:
    """examples/llm/tiny_llama.py as a module: one home for the tiny dataset."""
    path = Path(__file__).resolve().parents[2] / "examples" / "llm" / "tiny_llama.py"
    spec = importlib.util.spec_from_file_location("tiny_llama_example", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(root: Path) -> tuple[Path, Path]:
    """Write ``root/model`` and ``root/dataset``; returns both."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    data = records()
    dataset = root / "dataset"
    dataset.mkdir(parents=True, exist_ok=True)
    (dataset / "alpaca.json").write_text(json.dumps(data, indent=1))

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    learner = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=list(SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    text = [f"### Instruction:\n{r['instruction']}\n\n### Response:\n{r['output']}" for r in data]
    tokenizer.train_from_iterator(text, learner)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=SPECIAL[0], eos_token=SPECIAL[1], pad_token=SPECIAL[2]
    )
    model = root / "model"
    fast.save_pretrained(model)
    ids: dict[str, Any] = {
        "bos_token_id": fast.bos_token_id,
        "eos_token_id": fast.eos_token_id,
        "pad_token_id": fast.pad_token_id,
    }
    config = LlamaConfig(vocab_size=len(fast), tie_word_embeddings=True, **SHAPE, **ids)
    torch.manual_seed(SEED)
    LlamaForCausalLM(config).save_pretrained(model)
    return model, dataset
