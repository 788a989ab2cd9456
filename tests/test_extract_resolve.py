"""How values are followed through a script (pyresolve), one routing pattern per test."""

import textwrap

import pytest

from lintlora.extract import ExtractError
from lintlora.extract.python import extract_python
from lintlora.training_setup import Origin

HEAD = "import os, torch\nfrom peft import LoraConfig, get_peft_model\n" \
       "from transformers import AutoModelForCausalLM, TrainingArguments, Trainer\n"


def setup_of(body: str):
    source = HEAD + textwrap.dedent(body.lstrip("\n"))
    (s,) = extract_python("t.py", source)
    return s


def lora_r(body: str):
    return setup_of(textwrap.dedent(body) + "\nLoraConfig(r=R)\n").lora.r


def test_branch_decided_by_a_literal():
    r = lora_r("""
        USE_BIG = False
        if USE_BIG:
            R = 64
        else:
            R = 8
    """)
    assert r.value == 8 and r.origin is Origin.VARIABLE


def test_undecidable_branches_disagree_unknown():
    r = lora_r("""
        if os.path.exists("big"):
            R = 64
        else:
            R = 8
    """)
    assert not r.known and "branches" in r.source


def test_undecidable_branches_agree():
    r = lora_r("""
        if os.path.exists("big"):
            R = 16
        else:
            R = 16
    """)
    assert r.value == 16


def test_augmented_assignment_and_arithmetic():
    r = lora_r("""
        BASE = 4
        R = BASE
        R *= 2
        R = R + BASE // 2
    """)
    assert r.value == 10


def test_try_except_import_fallback_keeps_the_import():
    s = setup_of("""
        try:
            from peft import LoraConfig as LC
        except ImportError:
            LC = None
        LC(r=4)
    """)
    assert s.lora.r.value == 4


def test_dict_mutations_before_unpacking():
    s = setup_of("""
        kw = {"r": 8, "lora_alpha": 16}
        kw.update(lora_dropout=0.1)
        kw.setdefault("r", 99)
        kw["target_modules"] = ["q_proj"]
        kw.pop("lora_alpha")
        if os.path.exists("x"):
            kw["r"] = 32
        LoraConfig(**kw)
    """)
    lora = s.lora
    assert lora.lora_dropout.value == 0.1
    assert lora.target_modules.value == ("q_proj",)
    assert lora.lora_alpha.origin is Origin.LIBRARY_DEFAULT  # popped: peft's default
    assert not lora.r.known  # 8, or 32 when the file exists


def test_unresolved_unpacking_blocks_defaults():
    s = setup_of("""
        import json
        cfg = json.load(open(os.environ["CFG"]))
        LoraConfig(r=4, **cfg["lora"])
    """)
    assert s.lora.r.value == 4
    assert not s.lora.lora_alpha.known  # may be in cfg["lora"]: not peft's default
    assert "may be passed through" in s.lora.lora_alpha.source


def test_list_append_and_string_methods():
    s = setup_of("""
        targets = "q_proj, v_proj".replace(" ", "").split(",")
        targets.append("o_proj")
        LoraConfig(target_modules=targets, r=int("16"))
    """)
    assert s.lora.target_modules.value == ("q_proj", "v_proj", "o_proj")
    assert s.lora.r.value == 16


def test_dtype_spellings():
    s = setup_of("""
        name = "bf16"
        m = AutoModelForCausalLM.from_pretrained("x", torch_dtype=getattr(torch, "float16"))
        t = TrainingArguments(output_dir="o")
    """)
    assert s.model.torch_dtype.value == "float16"


def test_environment_defaults():
    s = setup_of("""
        R = int(os.getenv("LORA_R", "12"))
        LoraConfig(r=R)
        t = TrainingArguments(output_dir="o", per_device_train_batch_size=int(os.environ.get("BS") or 2))
    """)
    assert s.lora.r.value == 12 and s.lora.r.origin is Origin.ENV_DEFAULT
    assert s.lora.r.source == "$LORA_R"
    bs = s.training.per_device_train_batch_size
    assert bs.value == 2 and bs.origin is Origin.ENV_DEFAULT


def test_helper_call_sites_agree_or_not():
    same = lora_r("""
        def make(rank=4):
            return rank
        a = make(rank=8)
        b = make(rank=8)
        R = a
    """)
    assert same.value == 8
    s = setup_of("""
        def build(rank):
            return LoraConfig(r=rank)
        one = build(8)
        two = build(16)
    """)
    assert not s.lora.r.known or s.lora.r.value in (8, 16)


def test_self_reference_does_not_loop():
    r = lora_r("""
        R = R + 1
    """)
    assert not r.known


def test_local_print_helper_counts():
    s = setup_of("""
        def print_trainable_parameters(model):
            print(sum(p.numel() for p in model.parameters() if p.requires_grad))
        m = get_peft_model(AutoModelForCausalLM.from_pretrained("x"), LoraConfig(r=4))
        print_trainable_parameters(m)
    """)
    (call,) = s.calls_of("print_trainable_parameters")
    assert call.qualified_name.endswith("(local helper)")


def test_device_map_chosen_by_an_unset_world_size_rests_on_the_environment():
    s = setup_of("""
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--device_map", default="auto")
        args = p.parse_args()
        device_map = args.device_map
        world_size = int(os.environ.get("WORLD_SIZE", 1))
        if world_size > 1:
            device_map = {"": int(os.environ.get("LOCAL_RANK", 0))}
        AutoModelForCausalLM.from_pretrained("x", device_map=device_map)
    """)
    dm = s.model.device_map
    assert dm.value == "auto" and dm.origin is Origin.ENV_DEFAULT


def test_deep_nesting_is_an_extract_error_not_a_crash():
    deep = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    with pytest.raises(ExtractError):
        extract_python("deep.py", "import torch\n" + deep)


def test_deep_but_parseable_nesting_is_survived():
    deep = "import torch\nR = " + " + ".join(["1"] * 2000) + "\nfrom peft import LoraConfig\nLoraConfig(r=R)\n"
    try:
        setups = extract_python("long.py", deep)
    except ExtractError as exc:  # acceptable: reported, not raised as something else
        assert exc.code in ("LL000", "LL998", "LL999")  # LL998: valid, past a limit of lintlora
    else:
        assert setups[0].lora is not None
