"""LL017 fp16-overflow-model: float16 training of a family known to overflow float16."""

from __future__ import annotations

from lintlora.context import Context
from lintlora.extract.python import extract_python
from lintlora.findings import Severity
from lintlora.rules.ll002_fp16_instead_of_bf16 import Fp16InsteadOfBf16
from lintlora.rules.ll017_fp16_overflow_model import FAMILIES, Fp16OverflowModel as R, overflow_family
from lintlora.settings import Settings

SCRIPT = """import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("{name}", torch_dtype=torch.float16)
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
args = TrainingArguments(output_dir="out", {precision}, gradient_checkpointing=True)
Trainer(model=model, args=args).train()
"""


def setup_of(tmp_path, name="Qwen/Qwen2.5-0.5B", precision="fp16=True"):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT.format(name=name, precision=precision), encoding="utf-8")
    [s] = extract_python(str(path), path.read_text(encoding="utf-8"))
    return s


def run(s, gpu=None, rule=R):
    return list(rule().check(s, Context(Settings(gpu=gpu))))


def test_on_a_t4_it_proposes_float32_with_its_estimate(tmp_path):
    [f] = run(setup_of(tmp_path), "t4")
    assert (f.code, f.severity, f.span.line) == ("LL017", Severity.WARNING, 6)
    assert "Qwen2/2.5/3" in f.message and "65,504" in f.message and "QwenLM/Qwen3#670" in f.message
    assert "In float32 the estimated peak is" in f.message and "Tesla T4" in f.message
    assert f.estimate.peak_after_fix_bytes > f.estimate.peak_bytes  # float32 costs memory
    assert "fp16=False" in f.fix
    assert run(setup_of(tmp_path), "t4", Fp16InsteadOfBf16) == []  # LL002 is silent there


def test_on_a_bf16_gpu_ll002_speaks_and_ll017_is_silent(tmp_path):
    s = setup_of(tmp_path)
    assert run(s, "a100-80gb") == []
    assert [f.code for f in run(s, "a100-80gb", Fp16InsteadOfBf16)] == ["LL002"]


def test_no_gpu_names_both_remedies(tmp_path):
    [f] = run(setup_of(tmp_path))
    assert "bfloat16 (LL002)" in f.message and "float32" in f.message and "bf16=True" in f.fix


def test_families_by_name():
    class S:  # the one attribute overflow_family reads
        def __init__(self, name):
            from lintlora.training_setup import Setting
            self._n = Setting.literal(name, None)

        def get(self, path):
            return self._n

    cases = {
        "google/gemma-2-9b": "Gemma-2/3/4", "google/gemma-3-4b-it": "Gemma-2/3/4", "google/gemma-3n-E4B": "Gemma-2/3/4",
        "Qwen/Qwen2-7B": "Qwen2/2.5/3", "unsloth/Qwen2.5-7B-bnb-4bit": "Qwen2/2.5/3", "Qwen/Qwen3-8B": "Qwen2/2.5/3",
        "google/flan-t5-base": "T5/mT5/Flan-T5", "t5-small": "T5/mT5/Flan-T5", "google/mt5-small": "T5/mT5/Flan-T5",
        "google/t5-v1_1-base": "T5/mT5/Flan-T5",
    }
    for name, label in cases.items():
        fam = overflow_family(S(name))
        assert fam is not None and fam.label == label, name
    for name in ("google/gemma-2b", "google/gemma-7b", "Qwen/Qwen1.5-7B", "meta-llama/Llama-2-7b-hf", "gpt5-mini"):
        assert overflow_family(S(name)) is None, name
    assert all("#" in f.sources for f in FAMILIES)


def test_silent_traps(tmp_path):
    assert run(setup_of(tmp_path, name="meta-llama/Llama-2-7b-hf"), "t4") == []
    bf16 = setup_of(tmp_path, precision="bf16=True").set("model.torch_dtype", "bfloat16")
    assert run(bf16, "t4") == []
    fp32 = setup_of(tmp_path, precision="fp16=False").set("model.torch_dtype", "float32")
    assert run(fp32, "t4") == []
    path = tmp_path / "infer.py"
    path.write_text("import torch\nfrom transformers import AutoModelForCausalLM\n"
                    'model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2-7B", torch_dtype=torch.float16)\n'
                    "out = model.generate()\n", encoding="utf-8")
    [s] = extract_python(str(path), path.read_text(encoding="utf-8"))
    assert run(s, "t4") == []
