"""A LLaMA-Factory config whose header comment launches it through an FSDP/DeepSpeed accelerate
config is a sharded run (issue 15 trial), as a Python script's docstring launch is (trial 14,
``extract/pylaunch.py``): hiyouga/LLaMA-Factory examples/ascend/qwen3moe_full_sft_fsdp.yaml opens
with ``# accelerate launch \\`` / ``#     --config_file examples/accelerate/fsdp_config.yaml \\``
(continued over comment lines) and got an LL008 *error* (308 GiB on one A100-80GB). Without the
header the one-GPU verdict stays."""

from pathlib import Path

from lintlora.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "trial15" / "llama_factory" / "qwen3moe_full_sft_fsdp.yaml"


def _lint(capsys, path):
    try:
        main([str(path), "--gpu", "a100-80gb", "--no-cache", "--select", "LL008"])
    except SystemExit:
        pass
    return capsys.readouterr().out


def test_header_comment_launch_through_fsdp_is_sharded(capsys):
    assert "LL008" not in _lint(capsys, FIXTURE)


def test_without_the_header_ll008_stays(capsys, tmp_path):
    p = tmp_path / "cfg.yaml"
    p.write_text("\n".join(l for l in FIXTURE.read_text().splitlines() if not l.startswith("#")) + "\n")
    assert "LL008" in _lint(capsys, p)
