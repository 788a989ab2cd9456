"""The shape an estimate was computed for (batch × tokens per sequence), and what of it the
file did not say.

The activation and loss terms of the memory model scale with the micro-batch's tokens, so a
peak is only as good as its batch size and sequence length. :func:`shape_of` states both and
says which were not read from the file:

- *assumed* (``EstimateInputs.assumed`` holds ``"batch_size"`` / ``"seq_len"``): the file sets
  no value, :mod:`lintlora.estimate.from_setup` filled one in (batch 1, 512 tokens);
- a *library default* sequence length (``Origin.LIBRARY_DEFAULT``, e.g. trl's
  ``max_length=1024``): a truncation cap nobody chose for this data, so the peak assumes every
  batch reaches it.

Either makes the shape *guessed* (:attr:`Shape.guessed`), and so does an assumed 16-bit base
(``"quant"`` in ``assumed``: the model is loaded where lintlora cannot follow): a rule must not
raise a finding to an error on a fit verdict that rests on it. A library-default batch size (transformers'
``per_device_train_batch_size=8``) is what the trainer runs with, so it is named but not a
guess. Pure functions; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lintlora.training_setup import Origin

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.estimate.memory import EstimateInputs
    from lintlora.training_setup import Setting, TrainingSetup

__all__ = ["Shape", "shape_of", "library_possessive"]


@dataclass(frozen=True)
class Shape:
    """Batch × tokens per sequence of one estimate.

    Attributes:
        batch_size: examples per micro-batch per device.
        seq_len: tokens per sequence (padded length).
        sequences: sequences each example puts through the model (2 for paired preference
            trainers, 1 otherwise).
        remarks: sentences on values not read from the file ("assumes 512 tokens per sequence:
            the script sets no sequence length"; "1024 tokens per sequence is trl's default").
        guessed_words: what a fit verdict rests on when the shape is guessed ("the assumed 512
            tokens per sequence"), empty otherwise.
    """

    batch_size: int
    seq_len: int
    sequences: int = 1
    remarks: tuple[str, ...] = ()
    guessed_words: tuple[str, ...] = ()

    @property
    def guessed(self) -> bool:
        """Whether the batch size, the sequence length or the base's quantization was not read
        from the file."""
        return bool(self.guessed_words)

    @property
    def dims(self) -> str:
        """``"batch 4 × 512 tokens"`` (``"batch 4 × 2 sequences × 512 tokens"`` for paired
        trainers)."""
        middle = f" × {self.sequences} sequences" if self.sequences > 1 else ""
        return f"batch {self.batch_size}{middle} × {self.seq_len} tokens"

    @property
    def basis(self) -> str:
        """What a verdict rests on, for messages: ``"the assumed 512 tokens per sequence"``;
        ``"batch 4 × 512 tokens"`` when nothing was guessed."""
        if not self.guessed_words:
            return self.dims
        return " and ".join(self.guessed_words)

    @property
    def note(self) -> str:
        """The sentence for a finding's memory figures: the dims, then the remarks."""
        return "; ".join((self.dims, *self.remarks))


def library_possessive(setting: "Setting") -> str:
    """Whose default a library default is, for messages: the first word of its citation in the
    possessive (``"trl's"``, ``"transformers'"``), else ``"the library's"``."""
    word = (setting.source or "").split(" ", 1)[0]
    if not word.replace("-", "").replace("_", "").isalnum():
        return "the library's"
    return word + ("'" if word.endswith("s") else "'s")


def _file_word(setup: "TrainingSetup | None") -> str:
    if setup is not None and setup.kind in ("yaml", "json"):
        return "config"
    if setup is not None and setup.path.endswith(".ipynb"):
        return "notebook"
    return "script"


def _no_length(setting: "Setting | None", setup: "TrainingSetup | None", where: str) -> str:
    """Why there is no sequence length: ``the config leaves tokenizer.max_seq_len null`` when
    the file writes an explicit none, else ``the script sets no sequence length``."""
    if setting is None or setup is None or not setting.known or setting.value is not None \
            or not setting.expr or setting.span is None:
        return f"the {where} sets no sequence length"
    if setup.kind in ("yaml", "json"):
        return f"the {where} leaves {setting.expr} null"
    return f"the {where} passes {setting.expr}=None"


def _out_of_range(setup: "TrainingSetup | None", key: str, bound: int) -> bool:
    """Whether the setup writes ``key`` as a number beyond ``bound``
    (:mod:`lintlora.estimate.bounds`: the estimator then assumed a value instead), or as one
    the extractor left unresolved for being beyond its own bound (its reason says "lintlora's
    bound": :mod:`lintlora.extract.pybounds`, the YAML dialects' converters)."""
    from lintlora.estimate.bounds import beyond_bound

    if setup is None:
        return False
    s = setup.get(key)
    if not s.known:
        return s.span is not None and "lintlora's bound" in (s.source or "")
    return beyond_bound(s.value, bound)


def training_length(setup: "TrainingSetup", seq_len: int) -> "Setting":
    """The setting the estimate's sequence length comes from: ``training.max_seq_length``, or
    for unsloth the model's ``FastLanguageModel.from_pretrained(max_seq_length=...)`` when the
    estimate took that (``lintlora.estimate.setup_knobs``: unsloth's trainer patch uses it when
    the trainer sets none), so a trainer default of the same value is not named as the source."""
    seq = setup.get("training.max_seq_length")
    if setup.framework == "unsloth" and (not seq.known or seq.origin is Origin.LIBRARY_DEFAULT):
        msl = setup.get("model.max_seq_length")
        if msl.known and msl.value == seq_len:
            return msl
    return seq


def shape_of(inputs: "EstimateInputs", setup: "TrainingSetup | None" = None) -> Shape | None:
    """The shape of an estimate made from ``inputs`` (of ``setup``, when given), or ``None``
    for a load-only estimate (a file that does not train has no batch).

    Without ``setup`` only ``inputs.assumed`` tells assumed values (``lintlora estimate``'s
    flags); with it, library defaults are named too.
    """
    if inputs.method == "load":
        return None
    remarks: list[str] = []
    guessed: list[str] = []
    assumed = set(inputs.assumed)
    where = _file_word(setup)
    b, s = inputs.batch_size, inputs.seq_len
    seq_setting = training_length(setup, inputs.seq_len) if setup is not None else None
    seq_assumed = "seq_len" in assumed
    from lintlora.estimate.bounds import MAX_BATCH, MAX_SEQ_LEN

    batch_out = _out_of_range(setup, "training.per_device_train_batch_size", MAX_BATCH)
    seq_out = _out_of_range(setup, "training.max_seq_length", MAX_SEQ_LEN)
    if (batch_out and "batch_size" in assumed) or (seq_out and seq_assumed):
        # a value written but beyond lintlora's bound: not "the script sets none"
        parts, said = [], []
        if "batch_size" in assumed:
            parts.append(f"batch {b}")
            said.append("its batch size is beyond lintlora's bound" if batch_out
                        else "it sets no batch size")
        if seq_assumed:
            parts.append(f"{s} tokens per sequence")
            said.append("its sequence length is beyond lintlora's bound" if seq_out
                        else _no_length(seq_setting, setup, "it").replace("the it ", "it "))
        remarks.append(f"assumes {' and '.join(parts)}: in the {where} {' and '.join(said)}")
        guessed.append(f"the assumed {' and '.join(parts)}")
    elif "batch_size" in assumed and seq_assumed:
        why = _no_length(seq_setting, setup, where)
        why = f"the {where} sets neither" if why.endswith("sets no sequence length") else \
            f"the {where} sets no batch size and {why.split(' ', 2)[2]}"
        remarks.append(f"assumes batch {b} and {s} tokens per sequence: {why}")
        guessed.append(f"the assumed batch {b} and {s} tokens per sequence")
    elif "batch_size" in assumed:
        remarks.append(f"assumes batch {b}: the {where} sets no batch size")
        guessed.append(f"the assumed batch {b}")
    elif seq_assumed:
        remarks.append(f"assumes {s} tokens per sequence: {_no_length(seq_setting, setup, where)}")
        guessed.append(f"the assumed {s} tokens per sequence")
    if setup is not None and "batch_size" not in assumed:
        bs = setup.get("training.per_device_train_batch_size")
        if bs.origin is Origin.LIBRARY_DEFAULT and bs.value == b:
            remarks.append(f"batch {b} is {library_possessive(bs)} default per_device_train_batch_size")
    if seq_setting is not None and not seq_assumed and seq_setting.origin is Origin.LIBRARY_DEFAULT \
            and seq_setting.value == s:
        lib = library_possessive(seq_setting)
        written = f" ({seq_setting.expr}=None)" if seq_setting.expr and seq_setting.span is not None else \
            f": the {where} sets no sequence length"
        remarks.append(f"{s} tokens per sequence is {lib} default{written}")
        guessed.append(f"{lib} default {s} tokens per sequence")
    if "quant" in assumed:
        # not the shape, but a verdict rests on it the same way (lintlora.estimate.from_setup:
        # a model loaded where lintlora cannot follow is taken as 16-bit)
        remarks.append("assumes a 16-bit base: the quantization is unknown")
        guessed.append("the assumed 16-bit base")
    return Shape(b, s, max(1, int(inputs.sequences_per_example)), tuple(remarks), tuple(guessed))
