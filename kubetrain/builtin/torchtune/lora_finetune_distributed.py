"""torchtune's ``lora_finetune_distributed``, runnable where there is no CUDA (see :mod:`.cpu`):

    tune run [torchrun flags] kubetrain/builtin/torchtune/lora_finetune_distributed
        --config ... [overrides]

``tune run`` takes a recipe that is not one of its own by its module path, written with
slashes, and runs it as a module (under torchrun when given a torchrun flag), so this module is
what it runs. Must not: do anything when imported rather than run.
"""

from __future__ import annotations

if __name__ == "__main__":
    from kubetrain.builtin.torchtune import cpu

    cpu.run("lora_finetune_distributed")
