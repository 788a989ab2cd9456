"""The estimator: peak GPU memory and training time of a LoRA/QLoRA/full fine-tuning setup.

Pure arithmetic over an :class:`~lintlora.estimate.architecture.Architecture` (from the
built-in catalog ``lintlora/data/models.json``, a local ``config.json`` or the local Hugging
Face cache) and a :class:`~lintlora.estimate.gpus.Gpu` (``lintlora/data/gpus.json``). Nothing
here imports torch or touches the network.

Modules:

- :mod:`~lintlora.estimate.gpus`: the GPU catalog and name lookup.
- :mod:`~lintlora.estimate.architecture`: model architectures and how a name resolves to one.
- :mod:`~lintlora.estimate.params`: trainable-parameter counting with peft's matching rules.
- :mod:`~lintlora.estimate.profiles`: per-framework constants (HF+peft, torchtune, litgpt, ...).
- :mod:`~lintlora.estimate.memory`: the component model and its three counters.
- :mod:`~lintlora.estimate.from_setup`: a ``TrainingSetup`` -> estimator inputs, with every
  assumption stated.
- :mod:`~lintlora.estimate.compute`: FLOPs and training time.
- :mod:`~lintlora.estimate.fit`: the ranked "what would make it fit" list.
- :mod:`~lintlora.estimate.command`: the ``lintlora estimate`` click command.

Submodules are imported lazily by their users; this package imports nothing.
"""
