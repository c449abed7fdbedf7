"""Programs that kubetrain's builtin trainers run in a TrainJob's trainer pods.

    trl_sft    supervised fine-tuning with Hugging Face TRL and PEFT LoRA, the program of the
               ``trl-sft`` runtime (``BuiltinTrainer(config=TRLConfig(...))`` in the SDK)
    torchtune  for the TorchTune runtimes' ``tune run``: a metric logger that reports progress,
               and torchtune's distributed recipes where there is no CUDA

They read what the initializers fetched (``/workspace/model``, ``/workspace/dataset``), write
into the same volume (``/workspace/output``) and report progress with ``kubetrain.report``.

Must not: import the SDK, the CLI or the operator (a trainer pod runs only this and the
libraries it trains with), or import those libraries at import time of this package.
"""
