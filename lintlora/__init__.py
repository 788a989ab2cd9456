"""lintlora: an offline diagnostic linter for LoRA / QLoRA fine-tuning scripts and configs.

The package is laid out as DESIGN.md describes: ``discovery`` finds files, ``extract`` turns each
into one or more :class:`lintlora.training_setup.TrainingSetup`, ``rules`` judge a setup with the
help of ``estimate`` (peak GPU memory), and ``report`` prints the findings.

Nothing heavy is imported here, so ``lintlora --version`` stays near Python's own start-up.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
