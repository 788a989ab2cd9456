"""Dense base models of 2025-26 (lintlora/data/models_dense_2025.json) and how names that are
not catalogued ids resolve: instruct/chat variants, ModelScope mirrors, a fine-tune's base named
in its local files, and the note every guess by name leaves in the estimate's assumptions."""

from __future__ import annotations

import json
import pkgutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from lintlora.estimate.architecture import UnknownModelError, resolve_architecture
from lintlora.estimate.command import estimate_cmd

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "estimate" / "dense"

# Published totals, independent of the catalog's computation. kind:
#   "exact"  a figure with 3+ significant digits (or an exact count): within 1%;
#   "class"  the card states only a size class ("7B"): within half a unit of its last digit
#            ("7B" -> 0.5B, "1.8B" -> 0.05B), the third value.
# The source of each is in the record's params_published; the test's own copy is here.
PUBLISHED = {
    # Qwen1.5-7B: model.safetensors.index.json total_size 15,442,649,088 bytes / 2 (bf16), the
    # copy in huggingface/transformers examples/pytorch/torchacc/qwen/Qwen1.5-7B
    "Qwen/Qwen1.5-7B": (7_721_324_544, "exact"),
    "Qwen/Qwen1.5-1.8B": (1.8e9, "class", 0.05e9),
    "Qwen/Qwen1.5-4B": (4e9, "class", 0.5e9),
    "Qwen/Qwen1.5-14B": (14e9, "class", 0.5e9),
    "Qwen/Qwen1.5-72B": (72e9, "class", 0.5e9),
    # Qwen2 release blog, '# Params': 0.49B, 1.54B, 7.07B, 72.71B
    "Qwen/Qwen2-0.5B": (0.49e9, "exact"),
    "Qwen/Qwen2-1.5B": (1.54e9, "exact"),
    "Qwen/Qwen2-72B": (72.71e9, "exact"),
    # Qwen2.5-Coder cards, 'Number of Parameters'
    "Qwen/Qwen2.5-Coder-0.5B": (0.49e9, "exact"),
    "Qwen/Qwen2.5-Coder-1.5B": (1.54e9, "exact"),
    "Qwen/Qwen2.5-Coder-3B": (3.09e9, "exact"),
    "Qwen/Qwen2.5-Coder-7B": (7.61e9, "exact"),
    "Qwen/Qwen2.5-Coder-14B": (14.7e9, "exact"),
    "Qwen/Qwen2.5-Coder-32B": (32.5e9, "exact"),
    # the Qwen2.5-Math cards state no count: the Qwen2.5 cards of the same shapes do
    "Qwen/Qwen2.5-Math-1.5B": (1.54e9, "exact"),
    "Qwen/Qwen2.5-Math-7B": (7.61e9, "exact"),
    "Qwen/Qwen2.5-Math-72B": (72.7e9, "exact"),
    "mistralai/Mistral-Nemo-Base-2407": (12e9, "class", 0.5e9),
    "mistralai/Mistral-Small-24B-Base-2501": (24e9, "class", 0.5e9),
    # the Ministral-8B-Instruct-2410 card's architecture table: "Parameters 8,019,808,256"
    "mistralai/Ministral-8B-Instruct-2410": (8_019_808_256, "exact"),
    # Google's Gemma 3 270M announcement: "270 million parameters" (170M embedding + 100M blocks)
    "google/gemma-3-270m": (270e6, "exact"),
    "HuggingFaceTB/SmolLM3-3B": (3e9, "class", 0.5e9),
    "allenai/OLMo-2-0425-1B": (1e9, "class", 0.5e9),
    "allenai/OLMo-2-1124-7B": (7e9, "class", 0.5e9),
    "allenai/OLMo-2-0325-32B": (32e9, "class", 0.5e9),
    "ibm-granite/granite-3.1-2b-base": (2.5e9, "class", 0.05e9),    # card's architecture table: 2.5B
    "ibm-granite/granite-3.1-8b-base": (8.1e9, "exact"),    # card's architecture table: 8.1B
    "THUDM/glm-4-9b": (9e9, "class", 0.5e9),
    "THUDM/glm-4-9b-hf": (9e9, "class", 0.5e9),
    "internlm/internlm2_5-20b": (20e9, "class", 0.5e9),
    # internlm3-8b-instruct: 8.8B, the hub's safetensors total as listed at llmrun.dev (the card
    # says "8-billion parameter")
    "internlm/internlm3-8b-instruct": (8.8e9, "exact"),
    "01-ai/Yi-1.5-6B": (6e9, "class", 0.5e9),
    "01-ai/Yi-1.5-9B": (9e9, "class", 0.5e9),
    "01-ai/Yi-1.5-34B": (34e9, "class", 0.5e9),
}

# Published figures that count something else, reconciled by a hand computation:
ADJUSTED = {
    # Qwen2-7B: the blog's 7.07B leaves out the untied output layer, 152064 x 3584 rows
    # (Qwen2.5-7B, the same shapes, is 7.61B on its card)
    "Qwen/Qwen2-7B": (7.07e9 + 152064 * 3584, "exact"),
    # Qwen1.5-0.5B: the hub's 620M counts the checkpoint's stored lm_head.weight; the config ties
    # it to the embedding (tie_word_embeddings true), so the loaded model has 151936 x 1024 fewer
    "Qwen/Qwen1.5-0.5B": (620e6 - 151936 * 1024, "exact"),
}

# Only a size class is published and the real count lies above it (no exact total was available
# offline): bounded loosely, and said so. InternLM2.5-7B is 7.74B by its shapes, OLMo-2-13B 13.7B.
SIZE_CLASS_ONLY = {
    "Qwen/Qwen1.5-32B": 32e9,
    "allenai/OLMo-2-1124-13B": 13e9,
    "internlm/internlm2_5-1_8b": 1.8e9,
    "internlm/internlm2_5-7b": 7e9,
}


def _records() -> list[dict]:
    return json.loads(pkgutil.get_data("lintlora", "data/models_dense_2025.json"))


def test_every_record_has_a_pinned_published_total_and_sources():
    ids = {r["hf_id"] for r in _records()}
    assert ids == set(PUBLISHED) | set(ADJUSTED) | set(SIZE_CLASS_ONLY)
    for r in _records():
        assert r["sources"] and r["params_published"]["source"], r["name"]
        assert r["params_published"]["value"] > 0


SCRIPT = '''from transformers import AutoModelForCausalLM
from peft import LoraConfig, get_peft_model
from trl import SFTConfig, SFTTrainer
model = AutoModelForCausalLM.from_pretrained("{model}", torch_dtype="bfloat16")
model = get_peft_model(model, LoraConfig(r=16, target_modules="all-linear"))
SFTTrainer(model=model, args=SFTConfig(output_dir="o", per_device_train_batch_size=1,
                                       max_length=512, bf16=True)).train()
'''


def _script_estimate(tmp_path: Path, model: str) -> dict:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(model=model))
    r = CliRunner().invoke(estimate_cmd, [str(script), "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["estimate"]


@pytest.mark.parametrize("hf_id", sorted(set(PUBLISHED) | set(ADJUSTED) | set(SIZE_CLASS_ONLY)))
def test_a_script_naming_the_model_gets_an_estimate_with_the_published_count(tmp_path, hf_id):
    """The script path prices the model with its catalogued count: bf16 weights are 2 bytes a
    parameter (so breakdown.weights / 2 is the count), which must match the published total;
    the count computed from the shapes alone (no catalog figure) must too."""
    e = _script_estimate(tmp_path, hf_id)
    rec = next(r for r in _records() if r["hf_id"] == hf_id)
    assert e["model"] == rec["name"] and e["rough"] is False
    counted = e["breakdown"]["weights"] / 2
    from_shapes = replace(resolve_architecture(hf_id), params_total=0).total_params
    if hf_id in SIZE_CLASS_ONLY:
        published = SIZE_CLASS_ONLY[hf_id]
        for n in (counted, from_shapes):
            assert published <= n <= 1.12 * published, (hf_id, n)
        return
    published, kind, *half_unit = PUBLISHED.get(hf_id) or ADJUSTED[hf_id]
    tolerance = 0.01 * published if kind == "exact" else half_unit[0]
    for n in (counted, from_shapes):
        assert abs(n - published) <= tolerance, (hf_id, n, published)


@pytest.mark.parametrize("name, expected, modules", [
    ("THUDM/glm-4-9b", "GLM-4-9B", ("query_key_value", "dense")),
    ("THUDM/glm-4-9b-chat-hf", "GLM-4-9B-hf", ("q_proj", "k_proj", "v_proj", "o_proj")),
    ("allenai/OLMo-2-1124-7B-Instruct", "OLMo-2-7B", ("q_proj", "k_proj", "v_proj", "o_proj")),
    ("internlm/internlm2_5-7b-chat", "InternLM2.5-7B", ("wqkv", "wo")),
    ("internlm/internlm3-8b-instruct", "InternLM3-8B", ("q_proj", "k_proj", "v_proj", "o_proj")),
])
def test_module_names_follow_the_modeling_code(name, expected, modules):
    a = resolve_architecture(name)
    assert a.name == expected and a.attention_modules == modules


def test_glm_hf_fuses_gate_and_up_chatglm_fuses_qkv():
    # GlmMLP.gate_up_proj: 4096 -> 2 x 13696; ChatGLM query_key_value: 4096 -> (32 + 2*2) x 128
    hf = {s.name: (s.d_in, s.d_out) for s in resolve_architecture("THUDM/glm-4-9b-hf").block_linears()}
    assert hf["gate_up_proj"] == (4096, 27392) and hf["k_proj"] == (4096, 256)
    cg = {s.name: (s.d_in, s.d_out) for s in resolve_architecture("THUDM/glm-4-9b").block_linears()}
    assert cg["query_key_value"] == (4096, 4608) and cg["dense_h_to_4h"] == (4096, 27392)


@pytest.mark.parametrize("name", ["HuggingFaceTB/SmolLM3-3B", "allenai/OLMo-2-1124-7B",
                                  "ibm-granite/granite-3.1-8b-base", "THUDM/glm-4-9b-hf",
                                  "internlm/internlm3-8b-instruct"])
def test_model_types_peft_has_no_default_for_say_so(name):
    # peft src/peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING has no
    # smollm3, olmo2, granite, glm or internlm3 entry: target_modules=None raises there
    assert resolve_architecture(name).peft_default_targets is None


# ---- local config.json copies of the new model types -----------------------------------------
@pytest.mark.parametrize("folder, published, model_type", [
    ("qwen2-0.5b", 0.49e9, "qwen2"),                        # Qwen2 blog 0.49B
    ("internlm3-8b-instruct", 8.8e9, "internlm3"),          # hub total 8.8B
    ("olmo2-32b", 32.2e9, "olmo2"),                          # hand: 2*100352*5120 + 64*(2*5120*5120 + 2*5120*1024 + 3*5120*27648) = 32.23B
    ("Mistral-Nemo-Base-2407", 12.25e9, "mistral"),          # hand: 2*131072*5120 + 40*(2*5120*4096 + 2*5120*1024 + 3*5120*14336) = 12.25B
    ("glm-4-9b-chat", 9.40e9, "chatglm"),                    # hand: 2*151552*4096 + 40*(4096*4608 + 4096*4096 + 3*4096*13696) = 9.40B
])
def test_a_local_config_json_of_the_new_types_is_read(folder, published, model_type):
    a = resolve_architecture(str(FIXTURES / folder))
    assert a.model_type == model_type and not a.resolved_by
    assert abs(replace(a, params_total=0).total_params - published) <= 0.01 * published


def test_a_glm_hf_folder_is_not_priced_with_chatglm_modules(tmp_path):
    """A folder named like a catalogued chatglm model but holding a transformers ``glm`` config
    (the -hf layout: q/k/v_proj, gate_up_proj) keeps its own module names. The config is
    written here: glm-4-9b's shapes under transformers GlmConfig names."""
    folder = tmp_path / "glm-4-9b-chat-hf"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "glm", "architectures": ["GlmForCausalLM"], "hidden_size": 4096,
        "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
        "intermediate_size": 13696, "vocab_size": 151552, "attention_bias": True,
        "tie_word_embeddings": False}))
    a = resolve_architecture(str(folder))
    assert a.model_type == "glm"
    assert "gate_up_proj" in a.mlp_modules and "query_key_value" not in a.attention_modules


# ---- instruct variants and ModelScope ids ---------------------------------------------------------
@pytest.mark.parametrize("name, expected", [
    ("Qwen/Qwen2-7B-Instruct", "Qwen2-7B"),
    ("Qwen/Qwen1.5-14B-Chat", "Qwen1.5-14B"),
    ("mistralai/Mistral-Nemo-Instruct-2407", "Mistral-Nemo-12B"),
    ("google/gemma-3-270m-it", "Gemma-3-270M"),
    ("01-ai/Yi-1.5-34B-Chat", "Yi-1.5-34B"),
    ("qwen/Qwen2.5-7B-Instruct", "Qwen2.5-7B"),               # ModelScope's qwen org: the same ids
    ("ZhipuAI/glm-4-9b-chat", "GLM-4-9B"),                    # ms-swift glm.py pairs it with zai-org/glm-4-9b-chat
    ("ZhipuAI/glm-4-9b-chat-hf", "GLM-4-9B-hf"),
    ("Shanghai_AI_Laboratory/internlm2_5-7b-chat", "InternLM2.5-7B"),
    ("01ai/Yi-1.5-9B-Chat", "Yi-1.5-9B"),
])
def test_catalogued_variants_and_modelscope_ids_resolve_without_a_guess(name, expected):
    a = resolve_architecture(name)
    assert a.name == expected and a.resolved_by == ""


@pytest.mark.parametrize("name, expected, hub_id", [
    # ms-swift llama.py: Model('LLM-Research/Meta-Llama-3-8B-Instruct', 'meta-llama/Meta-Llama-3-8B-Instruct')
    ("LLM-Research/Meta-Llama-3-8B-Instruct", "Llama-3-8B", "meta-llama/Meta-Llama-3-8B-Instruct"),
    # ms-swift gemma.py: Model('AI-ModelScope/gemma-7b', 'google/gemma-7b')
    ("AI-ModelScope/gemma-7b", "Gemma-7B", "google/gemma-7b"),
    ("AI-ModelScope/Qwen2.5-Coder-7B-Instruct", "Qwen2.5-Coder-7B", "Qwen/Qwen2.5-Coder-7B-Instruct"),
])
def test_a_modelscope_mirror_id_resolves_by_repository_name_and_says_so(name, expected, hub_id):
    a = resolve_architecture(name)
    assert a.name == expected
    assert hub_id in a.resolved_by and "ModelScope" in a.resolved_by and "by name" in a.resolved_by


def test_a_modelscope_org_that_mirrors_one_org_only_matches_it():
    # ZhipuAI mirrors THUDM/zai-org only: a repository name of another org is no mirror of it
    a = resolve_architecture("ZhipuAI/Qwen2.5-7B")
    assert a.name == "Qwen2.5-7B" and "guess by name" in a.resolved_by and "ModelScope" not in a.resolved_by


def test_a_guess_by_name_is_stated_in_the_estimate(tmp_path):
    """An id the catalog does not list (a re-upload under another org) is resolved by its
    normalised name; the estimate's assumptions say it was a guess, on both paths."""
    name = "some-user/Qwen2.5-Coder-7B-Instruct"
    e = _script_estimate(tmp_path, name)
    assert e["model"] == "Qwen2.5-Coder-7B"
    [note] = [a for a in e["assumptions"] if name in a]
    assert "guess by name" in note and "--model-config" in note
    r = CliRunner().invoke(estimate_cmd, ["--model", name, "--format", "json"])
    assert r.exit_code == 0, r.output
    assert any("guess by name" in a for a in json.loads(r.stdout)["estimate"]["assumptions"])


def test_an_exact_id_leaves_no_resolution_note(tmp_path):
    e = _script_estimate(tmp_path, "Qwen/Qwen2.5-Coder-7B-Instruct")
    assert not any("guess by name" in a or "not catalogued" in a for a in e["assumptions"])


def test_a_same_architecture_id_carries_its_note_into_the_estimate():
    r = CliRunner().invoke(estimate_cmd, ["--model", "THUDM/glm-4-9b-chat-1m", "--format", "json"])
    assert r.exit_code == 0, r.output
    e = json.loads(r.stdout)["estimate"]
    assert e["model"] == "GLM-4-9B"
    assert any("not catalogued itself" in a and "4 KV heads" in a for a in e["assumptions"])


# ---- a fine-tune's base named in its local files -------------------------------------------------
def _project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir(parents=True)  # the project root (lintlora.safeio.confinement_root)
    return tmp_path


def test_an_adapter_folder_resolves_through_adapter_config(tmp_path):
    root = _project(tmp_path)
    adapter = root / "outputs" / "qwen-coder-lora"
    adapter.mkdir(parents=True)
    # what PeftModel.save_pretrained writes (peft src/peft/config.py: base_model_name_or_path)
    (adapter / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "base_model_name_or_path": "Qwen/Qwen2.5-Coder-7B-Instruct", "r": 16,
        "target_modules": ["q_proj", "v_proj"]}))
    script = root / "train.py"
    script.write_text(SCRIPT.format(model="outputs/qwen-coder-lora"))
    a = resolve_architecture("outputs/qwen-coder-lora", base_dir=str(script), root=str(root))
    assert a.name == "Qwen2.5-Coder-7B"
    assert "adapter_config.json" in a.resolved_by and "Qwen/Qwen2.5-Coder-7B-Instruct" in a.resolved_by
    r = CliRunner().invoke(estimate_cmd, [str(script), "--format", "json"])
    assert r.exit_code == 0, r.output
    e = json.loads(r.stdout)["estimate"]
    assert e["model"] == "Qwen2.5-Coder-7B"
    assert any("a fine-tune of Qwen/Qwen2.5-Coder-7B-Instruct" in x for x in e["assumptions"])


def test_a_fine_tune_folder_resolves_through_its_model_card(tmp_path):
    root = _project(tmp_path)
    ft = root / "my-olmo-sft"
    ft.mkdir()
    # model-card metadata (the Hub's README.md front matter): base_model may be a list
    (ft / "README.md").write_text("---\nlicense: apache-2.0\nbase_model:\n- allenai/OLMo-2-1124-7B\n"
                                  "tags: [trl, sft]\n---\n\n# my OLMo SFT\n")
    a = resolve_architecture("my-olmo-sft", base_dir=str(root / "train.py"), root=str(root))
    assert a.name == "OLMo-2-7B" and "README.md" in a.resolved_by and "base_model" in a.resolved_by


def test_a_cached_adapter_snapshot_resolves_through_its_base(tmp_path, monkeypatch):
    snap = tmp_path / "hub" / "models--someone--yi-9b-lora" / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "adapter_config.json").write_text(json.dumps(
        {"peft_type": "LORA", "base_model_name_or_path": "01-ai/Yi-1.5-9B"}))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HOME", str(tmp_path))
    a = resolve_architecture("someone/yi-9b-lora")
    assert a.name == "Yi-1.5-9B" and "a fine-tune of 01-ai/Yi-1.5-9B" in a.resolved_by


@pytest.mark.parametrize("card", [
    "---\nbase_model: /home/me/models/qwen\n---\n",              # a path: not followed
    "---\nbase_model:\n- Qwen/Qwen2.5-7B\n- mistralai/Mistral-Nemo-Base-2407\n---\n",  # a merge: no one base
    "# no front matter\nbase_model: Qwen/Qwen2.5-7B\n",           # not metadata
    "---\nbase_model: Qwen/Qwen2.5-7B\n",                         # never closed
])
def test_a_card_that_names_no_single_hub_base_resolves_nothing(tmp_path, card):
    root = _project(tmp_path)
    (root / "ft").mkdir()
    (root / "ft" / "README.md").write_text(card)
    with pytest.raises(UnknownModelError):
        resolve_architecture("ft", base_dir=str(root / "train.py"), root=str(root))


def test_an_oversized_card_is_not_read(tmp_path):
    from lintlora.estimate.architecture import MODEL_CONFIG_MAX_BYTES

    root = _project(tmp_path)
    (root / "ft").mkdir()
    (root / "ft" / "README.md").write_text("---\nbase_model: Qwen/Qwen2.5-7B\n---\n"
                                           + "x" * MODEL_CONFIG_MAX_BYTES)
    with pytest.raises(UnknownModelError):
        resolve_architecture("ft", base_dir=str(root / "train.py"), root=str(root))


def test_an_adapter_outside_the_project_is_not_followed(tmp_path):
    project = tmp_path / "project"
    _project(project)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "Qwen/Qwen2.5-7B"}))
    with pytest.raises(UnknownModelError, match="outside the project"):
        resolve_architecture("../elsewhere", base_dir=str(project / "train.py"), root=str(project))
