"""``torchrun -m kubetrain.builtin.trl_sft [TRL's sft flags]``: supervised fine-tuning with
Hugging Face TRL's ``SFTTrainer``, LoRA adapters through PEFT, on every node of a TrainJob.

The flags are those of ``trl sft`` (``SFTConfig``: ``--num_train_epochs``,
``--per_device_train_batch_size``, ``--learning_rate``, ``--max_length``, ...; ``ModelConfig``:
``--use_peft``, ``--lora_r``, ``--lora_alpha``, ``--lora_dropout``, ``--lora_target_modules``,
``--dtype``, ...), so what a user knows from TRL's command line carries over; the
``trl-sft`` runtime and ``TRLConfig`` in the SDK write them. kubetrain adds :class:`DataArguments`
(where the dataset is and what its columns are called) and these defaults, which fit the
initializers' volume: the model from ``/workspace/model``, the dataset from
``/workspace/dataset``, the adapter to ``/workspace/output``.

The dataset is read with ``datasets.load_dataset`` (a directory of JSON, JSON lines, CSV or
Parquet files, or one such file). Records TRL already understands (``messages``, ``prompt`` and
``completion``, or ``text``) are used as they are; instruct records in alpaca's shape
(``instruction``, optional ``input``, ``output``; other names through ``--instruction_column``
and friends) become prompt/completion pairs with alpaca's prompt, so that the loss is taken
on the response only.

Progress: rank 0 reports each logged step to the TrainJob with ``kubetrain.report``
(``progressPercentage`` from the step out of the run's steps, and the logged metrics: loss,
learning rate, grad norm, epoch), and prints one line per logged step (``step 4/16: loss
5.8123``) instead of a progress bar, for ``kubectl logs``. On CPU the nodes talk over gloo.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from typing import Any, Final

MODEL_PATH: Final = "/workspace/model"
DATASET_PATH: Final = "/workspace/dataset"
OUTPUT_PATH: Final = "/workspace/output"

# Alpaca's prompts (tatsu-lab/stanford_alpaca), with and without an input.
PROMPT: Final = (
    "Below is an instruction that describes a task. Write a response that appropriately "
    "completes the request.\n\n### Instruction:\n{instruction}\n\n### Response:\n"
)
PROMPT_WITH_INPUT: Final = (
    "Below is an instruction that describes a task, paired with an input that provides further "
    "context. Write a response that appropriately completes the request.\n\n### Instruction:\n"
    "{instruction}\n\n### Input:\n{input}\n\n### Response:\n"
)
TRL_FIELDS: Final = (("messages",), ("prompt", "completion"), ("text",))


@dataclasses.dataclass
class DataArguments:
    """kubetrain's flags: where the dataset is, and the names of an instruct dataset's columns."""

    dataset_path: str = dataclasses.field(
        default=DATASET_PATH, metadata={"help": "a directory or file of the dataset"}
    )
    dataset_split: str = dataclasses.field(default="train", metadata={"help": "its split"})
    instruction_column: str = "instruction"
    input_column: str = "input"
    output_column: str = "output"
    system_prompt: str | None = dataclasses.field(
        default=None, metadata={"help": "replaces alpaca's opening sentence"}
    )


def to_prompt_completion(record: dict[str, Any], data: DataArguments) -> dict[str, str]:
    """An instruct record as TRL's prompt/completion pair, with alpaca's prompt."""
    instruction = str(record.get(data.instruction_column) or "")
    given = str(record.get(data.input_column) or "")
    template = PROMPT_WITH_INPUT if given else PROMPT
    prompt = template.format(instruction=instruction, input=given)
    if data.system_prompt is not None:
        prompt = data.system_prompt + prompt[prompt.index("\n\n") :]
    return {"prompt": prompt, "completion": str(record.get(data.output_column) or "")}


def shape_of(columns: Sequence[str], data: DataArguments) -> str:
    """``trl`` for records TRL reads as they are, ``instruct`` for alpaca-shaped ones; a
    dataset of neither shape is refused, naming the columns it has and those accepted."""
    if any(all(c in columns for c in fields) for fields in TRL_FIELDS):
        return "trl"
    if data.instruction_column in columns and data.output_column in columns:
        return "instruct"
    raise SystemExit(
        f"error: dataset {data.dataset_path}: columns {sorted(columns)}; accepted: messages, "
        f"prompt and completion, text, or {data.instruction_column} and {data.output_column} "
        f"(alpaca's shape; other names with --instruction_column and --output_column)"
    )


def defaults(argv: Sequence[str], *, gpu: bool) -> list[str]:
    """``argv`` with kubetrain's defaults for those flags it does not give; without a GPU,
    full precision (TRL's default is bf16, which needs one) on the CPU."""
    given = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
    extra = {
        "--model_name_or_path": MODEL_PATH,
        "--output_dir": OUTPUT_PATH,
        "--logging_steps": "1",
        "--save_strategy": "no",
        "--report_to": "none",
        "--disable_tqdm": "true",
    }
    if not gpu:  # accelerate's CPU processes join a process group only when told they are CPU's
        extra |= {"--bf16": "false", "--use_cpu": "true"}
    return [f"{k}={v}" for k, v in extra.items() if k not in given] + list(argv)


def main(argv: Sequence[str] | None = None) -> int:
    import datasets
    import torch
    from transformers import AutoTokenizer, TrainerCallback
    from trl import ModelConfig, SFTConfig, SFTTrainer, TrlParser, get_peft_config

    from kubetrain import progress as reporting

    parser = TrlParser((SFTConfig, ModelConfig, DataArguments))
    gpu = torch.cuda.is_available()
    args = defaults(sys.argv[1:] if argv is None else argv, gpu=gpu)
    training, model, data = parser.parse_args_and_config(args)
    if not gpu and training.ddp_backend is None:
        training.ddp_backend = "gloo"  # nodes on CPU

    rank = int(os.environ.get("RANK", "0"))
    path = data.dataset_path
    if os.path.isdir(path):
        dataset = datasets.load_dataset(path, split=data.dataset_split)
    else:
        kind = os.path.splitext(path)[1].lstrip(".").replace("jsonl", "json")
        dataset = datasets.load_dataset(kind, data_files=path, split=data.dataset_split)
    if shape_of(dataset.column_names, data) == "instruct":
        dataset = dataset.map(
            lambda r: to_prompt_completion(r, data), remove_columns=dataset.column_names
        )

    tokenizer = AutoTokenizer.from_pretrained(model.model_name_or_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    training.model_init_kwargs = {**(training.model_init_kwargs or {}), "dtype": model.dtype}
    if model.dtype in (None, "auto"):
        training.model_init_kwargs["dtype"] = "auto"
    losses: list[float] = []
    last: dict[str, float] = {}  # the metrics of the last logged training step

    class Report(TrainerCallback):  # type: ignore[misc]
        """Each logged step as a line, and (from rank 0) as the TrainJob's progress."""

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if not state.is_world_process_zero or not logs:
                return
            metrics = {
                k: round(float(v), 6)
                for k, v in logs.items()
                if isinstance(v, int | float) and not isinstance(v, bool)
            }
            steps = max(state.max_steps, 1)
            if "loss" in metrics:
                losses.append(metrics["loss"])
                last.clear()
                last.update(metrics)
                print(f"step {state.global_step}/{steps}: loss {metrics['loss']:.4f}", flush=True)
            reporting.report(progress=100 * state.global_step / steps, metrics=metrics)

    trainer = SFTTrainer(
        model=model.model_name_or_path,
        args=training,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model),
        callbacks=[Report()],
    )
    if rank == 0:
        print(
            f"fine-tuning {model.model_name_or_path} on {len(dataset)} records from "
            f"{path}{' with LoRA' if model.use_peft else ''} in {training.world_size} "
            "processes",
            flush=True,
        )
    trainer.train()
    trainer.save_model(training.output_dir)
    if trainer.is_world_process_zero():
        if losses:
            print(f"loss: first {losses[0]:.4f}, last {losses[-1]:.4f}", flush=True)
        saved = ", ".join(sorted(os.listdir(training.output_dir)))
        print(f"saved to {training.output_dir}: {saved}", flush=True)
        reporting.report(progress=100, metrics=last)  # a report replaces the one before
    return 0


if __name__ == "__main__":
    sys.exit(main())
