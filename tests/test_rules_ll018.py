"""LL018 gemma-eager-attention: Gemma-2 trained on an attention path without soft-capping."""

from __future__ import annotations

from rules16b_support import findings

from lintlora.findings import Severity
from lintlora.rules.ll018_gemma_eager_attention import GemmaEagerAttention as R

TEMPLATE = """
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("MODEL", torch_dtype="bfloat16"ATTN)
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
args = TrainingArguments(output_dir="out", bf16=True, max_steps=10)
Trainer(model=model, args=args, train_dataset=ds).train()
"""


def script(model="google/gemma-2-9b", attn=""):
    return TEMPLATE.replace("MODEL", model).replace("ATTN", attn)


def test_default_sdpa_on_a_current_release_is_a_warning_priced_with_eager():
    [f] = findings(R, script(), transformers="4.51.3")
    assert f.severity is Severity.WARNING and f.span.line == 4
    assert "soft-capping" in f.message and "transformers==4.51.3 from requirements.txt:1" in f.message
    assert "with eager" in f.message
    assert f.estimate.peak_after_fix_bytes > f.estimate.peak_bytes
    assert 'attn_implementation="eager"' in f.fix


def test_sdpa_written_is_reported_on_any_release():
    [f] = findings(R, script(attn=', attn_implementation="sdpa"'), transformers="4.44.2")
    assert 'attn_implementation="sdpa"' in f.message


def test_flash_attention_with_old_flash_attn():
    src = script(attn=', attn_implementation="flash_attention_2"')
    [f] = findings(R, src, **{"flash-attn": "2.5.9"})
    assert "flash-attn older than 2.6" in f.message and "flash-attn==2.5.9" in f.message


# ---- silent traps --------------------------------------------------------------------------------
def test_eager_and_flex_are_silent():
    assert findings(R, script(attn=', attn_implementation="eager"')) == []
    assert findings(R, script(attn=', attn_implementation="flex_attention"')) == []


def test_flash_attention_with_a_current_or_unpinned_flash_attn_is_silent():
    src = script(attn=', attn_implementation="flash_attention_2"')
    assert findings(R, src) == []
    assert findings(R, src, **{"flash-attn": "2.7.4"}) == []


def test_default_on_releases_that_chose_eager_is_silent():
    assert findings(R, script(), transformers="4.44.2") == []


def test_gemma3_has_no_attention_softcapping():
    assert findings(R, script(model="google/gemma-3-4b-pt")) == []


def test_other_models_are_silent():
    assert findings(R, script(model="meta-llama/Llama-2-7b-hf")) == []


def test_unresolved_implementation_is_silent():
    assert findings(R, script(attn=", attn_implementation=args.attn")) == []
