"""peft-style trainable-parameter counting (lintlora.estimate.params)."""

import pytest

from lintlora.estimate.architecture import resolve_architecture
from lintlora.estimate.params import NoDefaultTargetsError, count_trainable

LLAMA2 = resolve_architecture("meta-llama/Llama-2-7b-hf")
LLAMA3 = resolve_architecture("meta-llama/Meta-Llama-3-8B")


def test_q_v_rank8_matches_peft_printout():
    t = count_trainable(LLAMA2, 8, ["q_proj", "v_proj"])
    assert t.peft_line() == ("trainable params: 4,194,304 || all params: 6,742,609,920 || "
                             "trainable%: 0.0622")


def test_gqa_kv_width_is_used():
    # Llama-3-8B: k/v project 4096 -> 1024, so q and v adapters differ in size
    t = count_trainable(LLAMA3, 8, ["q_proj", "v_proj"])
    assert t.lora_params == 32 * (8 * (4096 + 4096) + 8 * (4096 + 1024))


def test_none_uses_peft_default_and_all_linear_skips_lm_head():
    assert count_trainable(LLAMA2, 8, None).lora_params == count_trainable(LLAMA2, 8, ["q_proj", "v_proj"]).lora_params
    t = count_trainable(LLAMA2, 8, "all-linear")
    assert "lm_head" not in t.matched and {"q_proj", "down_proj"} <= set(t.matched)
    # down_proj reads the MLP intermediate (11008)
    down = next(m for m in t.adapted if m.name == "down_proj")
    assert (down.d_in, down.d_out) == (11008, 4096)


def test_regex_is_fullmatched():
    assert count_trainable(LLAMA2, 8, r".*\.q_proj").lora_params == 32 * 8 * 8192
    # "q_proj" alone does not fullmatch a full path
    assert count_trainable(LLAMA2, 8, "q_proj").lora_params == 0


def test_modules_to_save_counted_in_full_and_unmatched_reported():
    t = count_trainable(LLAMA2, 8, ["q_proj", "v_proj", "qproj"], ["lm_head", "embed_tokens"])
    assert t.full_params == 2 * 32000 * 4096
    assert t.unmatched == ("qproj",)


def test_embedding_as_lora_target():
    t = count_trainable(LLAMA2, 8, ["embed_tokens"])
    assert t.lora_params == 8 * (32000 + 4096)


def test_no_peft_default_raises():
    phi3 = resolve_architecture("microsoft/Phi-3-mini-4k-instruct")
    with pytest.raises(NoDefaultTargetsError):
        count_trainable(phi3, 8, None)


def test_gpt2_catalog_paths_are_plain_module_paths():
    gpt2 = resolve_architecture("openai-community/gpt2")
    assert gpt2.embedding_name == "transformer.wte" and gpt2.lm_head_name == "lm_head"
    wte = count_trainable(gpt2, 8, ["wte"])
    assert wte.matched == ("wte",) and wte.lora_params == 8 * (50257 + 768)
    wpe = count_trainable(gpt2, 8, ["wpe"])
    assert wpe.matched == ("wpe",) and wpe.lora_params == 8 * (1024 + 768)
