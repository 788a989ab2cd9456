"""GPU catalog lookup and architecture resolution (lintlora.estimate.gpus / .architecture)."""

import json

import pytest

from lintlora.estimate.architecture import UnknownModelError, catalog, resolve_architecture
from lintlora.estimate.gpus import UnknownGpuError, find_gpu, list_gpus


@pytest.mark.parametrize("name, expected", [
    ("rtx3090", "GeForce RTX 3090"),
    ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),
    ("RTX-4090", "GeForce RTX 4090"),
    ("a100-80gb", "A100 SXM4 80GB"),
    ("t4", "Tesla T4"),
    ("L4", "L4"),
    ("a10g", "A10G"),
])
def test_find_gpu_aliases_and_device_names(name, expected):
    assert find_gpu(name).name == expected


def test_ambiguous_alias_picks_smallest_and_says_so():
    g = find_gpu("a100")
    assert g.memory_bytes == min(x.memory_bytes for x in list_gpus() if x.name.startswith("A100"))
    assert g.ambiguity_note and "ambiguous" in g.ambiguity_note


def test_unknown_gpu_lists_close_matches():
    with pytest.raises(UnknownGpuError) as exc:
        find_gpu("rtx 309")
    assert "GeForce RTX 3090" in str(exc.value)
    assert isinstance(exc.value, LookupError)


def test_bf16_support_follows_compute_capability():
    assert find_gpu("t4").bf16_supported is False
    assert find_gpu("rtx3090").bf16_supported is True


def test_catalog_size_and_sources():
    archs = catalog()
    assert len(archs) >= 40
    assert all(a.source for a in archs)


@pytest.mark.parametrize("name, expected", [
    ("meta-llama/Llama-2-7b-hf", "Llama-2-7B"),
    ("NousResearch/Llama-2-7b-chat-hf", "Llama-2-7B"),
    ("unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit", "Llama-3.1-8B"),
    ("META-LLAMA/LLAMA-2-7B-HF", "Llama-2-7B"),
    ("torchtune.models.llama3_1.lora_llama3_1_8b", "Llama-3.1-8B"),
    ("torchtune.models.llama3_1.qlora_llama3_1_8b", "Llama-3.1-8B"),
    ("torchtune.models.mistral.lora_mistral_7b", "Mistral-7B-v0.1"),
    ("checkpoints/meta-llama/Meta-Llama-3.1-8B", "Llama-3.1-8B"),
])
def test_resolve_names(name, expected):
    assert resolve_architecture(name).name == expected


def test_param_count_matches_published_llama2_7b():
    # 6,738,415,616: the count peft prints as "all params" minus the adapters
    assert resolve_architecture("meta-llama/Llama-2-7b-hf").total_params == 6_738_415_616


def test_local_config_relative_to_linted_file(tmp_path):
    cfg = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
           "num_key_value_heads": 2, "intermediate_size": 1376, "vocab_size": 1000}
    (tmp_path / "mymodel").mkdir()
    (tmp_path / "mymodel" / "config.json").write_text(json.dumps(cfg))
    script = tmp_path / "train.py"
    script.write_text("")
    a = resolve_architecture("mymodel", base_dir=str(script))
    assert (a.hidden_size, a.num_hidden_layers, a.kv_width) == (512, 4, 128)


def test_hf_cache_lookup(tmp_path, monkeypatch):
    snap = tmp_path / "models--acme--tiny" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 256,
                                                   "num_hidden_layers": 2, "num_attention_heads": 4,
                                                   "intermediate_size": 688, "vocab_size": 500}))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert resolve_architecture("acme/tiny").hidden_size == 256


def test_unknown_model_says_how_to_supply_it():
    with pytest.raises(UnknownModelError) as exc:
        resolve_architecture("nobody/nothing-13b")
    msg = str(exc.value)
    assert "--model" in msg and "--model-config" in msg and "--params" in msg


def test_params_gives_a_rough_labelled_stand_in():
    a = resolve_architecture("nobody/nothing-13b", params=7e9)
    assert a.rough and "rough" in a.name and a.total_params == 7_000_000_000


# ---- GPU memory figures: what a process can use, each with its source ----------------------------
def _raw_gpus():
    from importlib import resources

    return json.loads(resources.files("lintlora").joinpath("data", "gpus.json").read_text("utf-8"))["gpus"]


@pytest.mark.parametrize("name, mib", [
    ("t4", 15109),                       # not the marketed 16 GiB, nor nvidia-smi's 15360 MiB
    ("a10g", 22731),
    ("rtx3090", round(23.70 * 1024)),
    ("rtx4090", round(23.64 * 1024)),
    ("a100-40gb", round(39.59 * 1024)),
    ("a100-80gb", round(79.14 * 1024)),
    ("h100-sxm", round(79.11 * 1024)),
    ("v100-sxm2-16gb", round(15.78 * 1024)),
])
def test_common_cards_use_the_cuda_visible_total(name, mib):
    g = find_gpu(name)
    assert g.memory_bytes == mib * 2**20
    assert g.memory_kind == "usable" and "CUDA-visible" in g.memory_source


def test_nvidia_smi_totals_are_the_fallback_and_say_so():
    l4 = find_gpu("l4")
    assert l4.memory_bytes == 23034 * 2**20 and l4.memory_kind == "nvidia-smi"
    assert "reserves" in l4.memory_source


def test_every_memory_figure_has_a_source_and_none_exceeds_the_marketed_size():
    for rec in _raw_gpus():
        nominal = (rec.get("per_device_memory_gb") or rec["memory_gb"]) * 2**30
        for field in ("usable_total_mib", "reported_total_mib"):
            if rec.get(field):
                src = rec.get(field.replace("_mib", "_source"))
                assert src and len(src) > 10, (rec["name"], field)
                assert rec[field] * 2**20 <= nominal, rec["name"]
        if rec.get("usable_total_mib") and rec.get("reported_total_mib"):
            # nvidia-smi's newer Total also counts the driver's reserve
            assert rec["usable_total_mib"] <= rec["reported_total_mib"], rec["name"]
    for g in list_gpus():
        assert g.memory_source and g.memory_kind in ("usable", "nvidia-smi", "nominal")
