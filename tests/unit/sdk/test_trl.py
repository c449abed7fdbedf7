"""TRLConfig as the TrainJob's trainer: TRL's flags after the runtime's, the Kubeflow SDK's
LoRA and instruct-dataset names read, and mistakes named by field before anything is sent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from kubetrain.operator.trainjob import builtin
from kubetrain.sdk import InvalidTrainer, TRLConfig, _builtin, _status, _trl

RUNTIME: dict[str, Any] = yaml.safe_load(builtin.files()["trl_sft.yaml"])
DEFAULTS = [
    "--use_peft=true",
    "--lora_r=8",
    "--lora_alpha=16",
    "--lora_dropout=0.05",
    "--lora_target_modules",
    "q_proj",
    "v_proj",
]


@dataclass
class LoraConfig:
    """The Kubeflow SDK's LoraConfig, field for field."""

    apply_lora_to_mlp: bool | None = None
    apply_lora_to_output: bool | None = None
    lora_attn_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "v_proj", "output_proj"]
    )
    lora_rank: int | None = None
    lora_alpha: int | None = None
    lora_dropout: float | None = None
    quantize_base: bool | None = None
    use_dora: bool | None = None


@dataclass
class InstructDataset:
    """The Kubeflow SDK's TorchTuneInstructDataset's fields that TRLConfig reads."""

    split: str | None = None
    new_system_prompt: str | None = None
    column_map: dict[str, str] | None = None


@dataclass
class BuiltinTrainer:
    config: Any


def test_the_runtime_s_defaults_come_first_and_the_config_s_flags_after() -> None:
    config = TRLConfig(
        dtype="fp32",
        batch_size=8,
        epochs=3,
        learning_rate=2e-4,
        max_steps=40,
        max_length=256,
        num_nodes=2,
        peft_config=LoraConfig(lora_rank=16, lora_alpha=32, lora_dropout=0, use_dora=True),
        dataset_preprocess_config=InstructDataset(
            split="train[:90%]",
            new_system_prompt="You answer briefly.",
            column_map={"instruction": "question", "output": "answer"},
        ),
        resources_per_node={"cpu": 2, "memory": "4Gi", "gpu": 1},
        args=["--gradient_accumulation_steps=2"],
    )

    spec = _builtin.trainer_spec(BuiltinTrainer(config), RUNTIME)

    assert spec == {
        "args": [
            *DEFAULTS,
            "--bf16=false",
            "--dtype=float32",
            "--per_device_train_batch_size=8",
            "--num_train_epochs=3",
            "--learning_rate=0.0002",
            "--max_steps=40",
            "--max_length=256",
            "--use_peft=true",
            "--lora_r=16",
            "--lora_alpha=32",
            "--lora_dropout=0.0",
            "--lora_target_modules",
            "q_proj",
            "v_proj",
            "o_proj",
            "--use_dora=true",
            "--dataset_split=train[:90%]",
            "--instruction_column=question",
            "--output_column=answer",
            "--system_prompt=You answer briefly.",
            "--gradient_accumulation_steps=2",
        ],
        "numNodes": 2,
        "resourcesPerNode": {
            "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
            "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
        },
    }


def test_an_empty_config_keeps_the_runtime_s_flags() -> None:
    assert _trl.trainer_spec(TRLConfig(), RUNTIME) == {"args": DEFAULTS}


def test_mlp_modules_and_qlora_reach_the_flags() -> None:
    peft = LoraConfig(lora_attn_modules=["k_proj"], apply_lora_to_mlp=True, quantize_base=True)
    assert _trl.lora_args(peft) == [
        "--use_peft=true",
        "--lora_target_modules",
        "k_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
        "--load_in_4bit=true",
    ]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            TRLConfig(dtype="fp16"),
            "TRLConfig.dtype: 'fp16'; accepted: bf16, fp32",
            id="a dtype TRL's runtime does not take",
        ),
        pytest.param(
            TRLConfig(epochs=0),
            "TRLConfig.epochs: 0; accepted: a whole number, 1 or more",
            id="no epochs",
        ),
        pytest.param(
            TRLConfig(learning_rate=float("nan")),
            "TRLConfig.learning_rate: nan; accepted: a number above 0",
            id="a learning rate that is not a number",
        ),
        pytest.param(
            TRLConfig(peft_config=LoraConfig(lora_dropout=1.5)),
            "TRLConfig.peft_config.lora_dropout: 1.5; accepted: a number from 0 up to 1",
            id="a dropout of more than everything",
        ),
        pytest.param(
            TRLConfig(peft_config=LoraConfig(lora_attn_modules=["attn"])),
            "TRLConfig.peft_config.lora_attn_modules: 'attn'; accepted: q_proj, k_proj, v_proj, "
            "output_proj",
            id="a module no Llama has",
        ),
        pytest.param(
            TRLConfig(dataset_preprocess_config=InstructDataset(column_map={"prompt": "q"})),
            "TRLConfig.dataset_preprocess_config.column_map['prompt']: 'q'; accepted: keys "
            "instruction, input, output, each naming a column",
            id="a column the instruct format has not",
        ),
        pytest.param(
            TRLConfig(args="--max_steps=3"),  # type: ignore[arg-type]
            "TRLConfig.args: '--max_steps=3'; accepted: a list of strings",
            id="args as one string",
        ),
    ],
)
def test_mistakes_are_named_by_field(config: TRLConfig, message: str) -> None:
    with pytest.raises(InvalidTrainer) as caught:
        _trl.trainer_spec(config, RUNTIME)
    assert str(caught.value) == message


def test_a_runtime_of_another_framework_is_refused() -> None:
    torch = yaml.safe_load(builtin.files()["torch_distributed.yaml"])
    with pytest.raises(InvalidTrainer) as caught:
        _trl.trainer_spec(TRLConfig(), torch)
    assert str(caught.value) == (
        "BuiltinTrainer(config=TRLConfig(...)): runtime 'torch-distributed' is of framework "
        "'torch'; accepted: a runtime labelled trainer.kubeflow.org/framework: trl (trl-sft)"
    )


def test_the_runtime_lists_as_a_builtin_trainer_s() -> None:
    runtime = _status.runtime_of(RUNTIME)
    assert (runtime.name, runtime.trainer.framework) == ("trl-sft", "trl")
    assert runtime.trainer.trainer_type.value == "BuiltinTrainer"
