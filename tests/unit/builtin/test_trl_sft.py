"""The TRL fine-tuning program's pure parts: its defaults, and which datasets it reads how."""

from __future__ import annotations

import pytest

from kubetrain.builtin import trl_sft


def test_kubetrain_s_defaults_fill_only_what_is_not_given() -> None:
    args = trl_sft.defaults(["--output_dir=/tmp/out", "--lora_r=4"], gpu=False)
    assert args == [
        "--model_name_or_path=/workspace/model",
        "--logging_steps=1",
        "--save_strategy=no",
        "--report_to=none",
        "--disable_tqdm=true",
        "--bf16=false",
        "--use_cpu=true",
        "--output_dir=/tmp/out",
        "--lora_r=4",
    ]
    assert "--bf16=false" not in trl_sft.defaults([], gpu=True), "TRL's bf16 on a GPU"


@pytest.mark.parametrize(
    ("record", "prompt"),
    [
        pytest.param(
            {"instruction": "Add 2 and 3.", "input": "", "output": "5"},
            "Below is an instruction that describes a task. Write a response that appropriately "
            "completes the request.\n\n### Instruction:\nAdd 2 and 3.\n\n### Response:\n",
            id="without an input",
        ),
        pytest.param(
            {"instruction": "Translate.", "input": "Hallo", "output": "5"},
            "Below is an instruction that describes a task, paired with an input that provides "
            "further context. Write a response that appropriately completes the request.\n\n"
            "### Instruction:\nTranslate.\n\n### Input:\nHallo\n\n### Response:\n",
            id="with an input",
        ),
    ],
)
def test_alpaca_records_become_prompt_and_completion(record: dict[str, str], prompt: str) -> None:
    pair = trl_sft.to_prompt_completion(record, trl_sft.DataArguments())
    assert pair == {"prompt": prompt, "completion": "5"}


def test_renamed_columns_and_a_system_prompt() -> None:
    data = trl_sft.DataArguments(
        instruction_column="q", output_column="a", system_prompt="Answer briefly."
    )
    pair = trl_sft.to_prompt_completion({"q": "Why?", "a": "Because."}, data)
    assert pair == {
        "prompt": "Answer briefly.\n\n### Instruction:\nWhy?\n\n### Response:\n",
        "completion": "Because.",
    }


@pytest.mark.parametrize(
    ("columns", "shape"),
    [
        pytest.param(["messages"], "trl", id="conversations"),
        pytest.param(["prompt", "completion"], "trl", id="prompt and completion"),
        pytest.param(["text", "id"], "trl", id="plain text"),
        pytest.param(["instruction", "input", "output"], "instruct", id="alpaca's shape"),
    ],
)
def test_datasets_are_read_by_their_columns(columns: list[str], shape: str) -> None:
    assert trl_sft.shape_of(columns, trl_sft.DataArguments()) == shape


def test_a_dataset_of_no_known_shape_is_refused_naming_its_columns() -> None:
    with pytest.raises(SystemExit) as caught:
        trl_sft.shape_of(["question", "answer"], trl_sft.DataArguments(dataset_path="/d"))
    assert str(caught.value) == (
        "error: dataset /d: columns ['answer', 'question']; accepted: messages, prompt and "
        "completion, text, or instruction and output (alpaca's shape; other names with "
        "--instruction_column and --output_column)"
    )
