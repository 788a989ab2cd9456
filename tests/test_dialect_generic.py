"""The generic dialect: blog-style keys, nested sections, nothing assumed."""

from __future__ import annotations

from pathlib import Path

from lintlora.extract.yaml_config import extract_config
from lintlora.facts import checkpointing
from lintlora.training_setup import Origin, TrainingSetup

CONFIGS = Path(__file__).resolve().parent.parent / "fixtures" / "configs"


def load(rel: str) -> TrainingSetup:
    path = CONFIGS / rel
    [setup] = extract_config(str(path), path.read_text(encoding="utf-8"))
    return setup


def at(setup: TrainingSetup, dotted: str):
    s = setup.get(dotted)
    return s.value, s.origin, (s.span.line if s.span else None)


def test_blog_config_with_nested_sections():
    s = load("bad/generic_blog.yaml")
    assert s.dialect == "generic" and s.framework == "transformers"
    assert at(s, "model.name_or_path") == ("meta-llama/Llama-2-7b-hf", Origin.LITERAL, 3)
    assert at(s, "quantization.bits") == (4, Origin.LITERAL, 4)
    assert at(s, "lora.r") == (64, Origin.LITERAL, 6)
    assert at(s, "lora.lora_alpha") == (16, Origin.LITERAL, 7)
    assert at(s, "lora.target_modules") == (("q_proj", "k_proj", "v_proj", "o_proj", "lm_head"),
                                            Origin.LITERAL, 9)
    assert at(s, "training.per_device_train_batch_size") == (4, Origin.LITERAL, 11)
    assert at(s, "training.max_seq_length") == (1024, Origin.LITERAL, 13)
    assert at(s, "training.learning_rate") == (2e-4, Origin.LITERAL, 14)
    assert at(s, "training.gradient_checkpointing") == (False, Origin.LITERAL, 15)
    assert at(s, "training.dataloader_num_workers") == (16, Origin.LITERAL, 16)


def test_nothing_is_assumed_for_absent_keys():
    [s] = extract_config("g.yaml", "lora_rank: 8\ntarget_modules: [q_proj, v_proj]\n"
                                   "max_seq_length: 512\n")
    assert s.dialect == "generic"
    assert not s.get("training.gradient_checkpointing").known
    assert checkpointing(s).value is None
    assert not s.get("model.name_or_path").known
    assert s.quantization is None
