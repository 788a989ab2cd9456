"""Every memory figure states the shape it was computed for (batch × tokens per sequence) and
what of it the file did not set; a fit verdict resting on such a shape is never an error
(lintlora/estimate/shape.py, Context.figures, LL001). Real extractors and estimator."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace

from lintlora.context import Context
from lintlora.estimate.memory import EstimateInputs
from lintlora.estimate.shape import shape_of
from lintlora.findings import Severity
from lintlora.report import memory_line
from lintlora.rules.ll001_gradient_checkpointing_off import GradientCheckpointingOff
from lintlora.settings import Settings

LOOP = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    from transformers import AutoModelForCausalLM
    from peft import LoraConfig, get_peft_model

    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-8B", torch_dtype=torch.bfloat16)
    model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    model.print_trainable_parameters()
    loader = DataLoader(train_ds, batch_size=4, shuffle=True)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    for batch in loader:
        out = model(**batch)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
    """)

SFT = textwrap.dedent("""\
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
    args = SFTConfig(output_dir="out", per_device_train_batch_size=4, gradient_checkpointing=False{length})
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds,
                         peft_config=LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    trainer.train()
    """)


def _setup(path, text):
    from lintlora.engine import read_setups

    path.write_text(text)
    (setup,) = read_setups(str(path))
    return setup


def _ll001(setup, gpu):
    [finding] = GradientCheckpointingOff().check(setup, Context(Settings(gpu=gpu)))
    return finding


# ---- shape_of on estimator inputs ----------------------------------------------------------

def test_shape_read_from_the_file_is_plain_dims():
    shape = shape_of(EstimateInputs(method="lora", batch_size=4, seq_len=2048))
    assert shape.note == "batch 4 × 2048 tokens" and not shape.guessed and shape.basis == shape.note


def test_assumed_values_are_said_and_make_the_shape_guessed():
    seq = shape_of(EstimateInputs(method="lora", batch_size=4, seq_len=512, assumed=("seq_len", "optim")))
    assert seq.note == "batch 4 × 512 tokens; assumes 512 tokens per sequence: the script sets no sequence length"
    assert seq.guessed and seq.basis == "the assumed 512 tokens per sequence"
    batch = shape_of(EstimateInputs(method="lora", batch_size=1, seq_len=2048, assumed=("batch_size",)))
    assert batch.note == "batch 1 × 2048 tokens; assumes batch 1: the script sets no batch size"
    both = shape_of(EstimateInputs(method="lora", batch_size=1, seq_len=512, assumed=("batch_size", "seq_len")))
    assert both.note.endswith("assumes batch 1 and 512 tokens per sequence: the script sets neither")
    # an assumed optimizer or attention does not touch the shape
    other = shape_of(EstimateInputs(method="lora", batch_size=2, seq_len=128, assumed=("optim",)))
    assert not other.guessed and other.note == "batch 2 × 128 tokens"


def test_paired_trainers_count_two_sequences_and_load_only_has_no_shape():
    dpo = shape_of(EstimateInputs(method="lora", batch_size=2, seq_len=1024, sequences_per_example=2))
    assert dpo.note == "batch 2 × 2 sequences × 1024 tokens"
    assert shape_of(EstimateInputs(method="load")) is None


# ---- the note on findings, from real files ---------------------------------------------------

def test_torch_loop_without_a_length_is_a_warning_saying_the_length_was_assumed(tmp_path):
    setup = _setup(tmp_path / "loop.py", LOOP)
    f = _ll001(setup, "rtx4090")
    assert f.estimate.peak_bytes > f.estimate.gpu_memory_bytes >= f.estimate.peak_after_fix_bytes
    assert f.severity is Severity.WARNING  # an error before: "as written it does not fit"
    assert "does not fit on the GeForce RTX 4090 (23.6 GiB) at the assumed 512 tokens per sequence" in f.message
    assert "Reported as a warning, not an error" in f.message
    assert f.estimate.note == ("batch 4 × 512 tokens; assumes 512 tokens per sequence: "
                               "the script sets no sequence length")
    line = memory_line(f.estimate)
    assert line.endswith(f"({f.estimate.note})") and "(does not fit)" in line


def test_a_library_default_length_is_named_and_keeps_the_finding_a_warning(tmp_path):
    """The same shape (batch 4 × 1024 tokens) written in the file is an error; left to trl's
    default max_length it is a warning naming the default."""
    written = _ll001(_setup(tmp_path / "a.py", SFT.format(length=", max_length=1024")), "rtx4090")
    default = _ll001(_setup(tmp_path / "b.py", SFT.format(length="")), "rtx4090")
    assert written.estimate.peak_bytes == default.estimate.peak_bytes  # same shape, same estimate
    assert written.severity is Severity.ERROR and written.estimate.note == "batch 4 × 1024 tokens"
    assert default.severity is Severity.WARNING
    assert default.estimate.note == ("batch 4 × 1024 tokens; 1024 tokens per sequence is trl's default: "
                                     "the script sets no sequence length")
    assert "at trl's default 1024 tokens per sequence" in default.message


def test_explicit_none_length_is_quoted(tmp_path):
    text = SFT.format(length=", max_length=max_len").replace("model = Auto", "max_len = None\nmodel = Auto")
    f = _ll001(_setup(tmp_path / "c.py", text), "rtx4090")
    assert f.severity is Severity.WARNING
    assert "1024 tokens per sequence is trl's default (max_len=None)" in f.estimate.note


def test_torchtune_null_length_is_named_in_the_config(tmp_path):
    config = textwrap.dedent("""\
        model:
          _component_: torchtune.models.llama3_1.lora_llama3_1_8b
          lora_attn_modules: ['q_proj', 'v_proj']
          lora_rank: 8
        tokenizer:
          _component_: torchtune.models.llama3.llama3_tokenizer
          path: /tmp/tokenizer.model
          max_seq_len: null
        dataset:
          _component_: torchtune.datasets.alpaca_cleaned_dataset
        batch_size: 2
        optimizer:
          _component_: torch.optim.AdamW
          lr: 3e-4
        enable_activation_checkpointing: False
        dtype: bf16
        """)
    setup = _setup(tmp_path / "tt.yaml", config)
    f = _ll001(setup, None)
    assert f.estimate.note == ("batch 2 × 512 tokens; assumes 512 tokens per sequence: "
                               "the config leaves tokenizer.max_seq_len null")


def test_every_output_format_carries_the_note(tmp_path):
    from click.testing import CliRunner

    from lintlora.cli_app import app

    path = tmp_path / "loop.py"
    path.write_text(LOOP)
    note = "batch 4 × 512 tokens; assumes 512 tokens per sequence: the script sets no sequence length"
    runner = CliRunner()

    def out(fmt):
        return runner.invoke(app, ["--no-cache", "--gpu", "rtx4090", "--select", "LL001", "--format", fmt,
                                    str(path)]).output

    doc = json.loads(out("json"))
    [finding] = doc["findings"]
    assert finding["estimate"]["note"] == note and finding["severity"] == "warning"
    sarif = json.loads(out("sarif"))
    [result] = sarif["runs"][0]["results"]
    assert f"({note})" in result["message"]["text"] and result["level"] == "warning"
    assert f"({note})" in out("text")
    assert note in out("markdown")


def test_rough_estimate_keeps_its_note_before_the_shape(tmp_path):
    setup = _setup(tmp_path / "loop.py", LOOP.replace("meta-llama/Llama-3.1-8B", "my-org/unknown"))
    context = Context(Settings(params=7e9))
    figures = context.figures(setup)
    assert figures.note.startswith("rough estimate from a parameter count; batch 4 × 512 tokens; assumes")


def test_fit_heading_says_when_it_rests_on_an_assumed_shape():
    from lintlora.estimate.architecture import resolve_architecture
    from lintlora.estimate.fit import heading
    from lintlora.estimate.memory import estimate_memory
    from lintlora.estimate.profiles import get_profile

    arch = resolve_architecture("meta-llama/Llama-2-7b-hf")
    inputs = EstimateInputs(method="lora", batch_size=8, seq_len=512)
    small = 8 * 2**30
    read = estimate_memory(inputs, arch, get_profile("transformers"), gpu="x", gpu_memory_bytes=small)
    assumed = estimate_memory(replace(inputs, assumed=("seq_len",)), arch, get_profile("transformers"),
                              gpu="x", gpu_memory_bytes=small)
    assert heading(read) == "what would make it fit"
    assert heading(assumed) == "what would make it fit at the assumed 512 tokens per sequence"


def test_library_default_batch_is_named_but_not_a_guess(tmp_path):
    text = SFT.format(length=", max_length=2048").replace("per_device_train_batch_size=4, ", "")
    setup = _setup(tmp_path / "d.py", text)
    shape = Context(Settings()).shape(setup)
    assert shape.note == "batch 8 × 2048 tokens; batch 8 is trl's default per_device_train_batch_size"
    assert not shape.guessed  # the trainer does run batches of 8


def test_a_file_that_trains_nothing_says_its_figure_is_the_load(tmp_path):
    setup = _setup(tmp_path / "infer.py", textwrap.dedent("""\
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
        print(model.generate(**inputs))
        """))
    context = Context(Settings())
    assert not setup.is_training and context.shape(setup) is None
    assert context.figures(setup).note == "memory to load the model: the file trains nothing"


def test_library_possessive():
    from lintlora.estimate.shape import library_possessive
    from lintlora.training_setup import Setting

    assert library_possessive(Setting.library_default(8, "transformers src/x.py @ 1")) == "transformers'"
    assert library_possessive(Setting.library_default(1024, "trl trl/trainer/sft_config.py")) == "trl's"
    assert library_possessive(Setting.library_default(1, "")) == "the library's"
