"""LL008 is silent on a TRL recipe that trains only the layers a Spectrum file unfreezes (issue 15
trial): philschmid/deep-learning-pytorch-huggingface training/receipes/llama-3-1-8b-spectrum.yaml
(``spectrum_config_path``: scripts/run_sft.py ``setup_model_for_spectrum`` freezes every
parameter, then unfreezes those the file lists, 30% here) was priced as a full fine-tune of
Llama-3.1-8B and got "does not fit on the A100 SXM4 80GB ... no batch size or sequence length
would make it fit". Without the key the full fine-tune is still reported."""

from pathlib import Path

from lintlora.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "trial15" / "trl_yaml" / "llama-3-1-8b-spectrum.yaml"


def _lint(capsys, path):
    try:
        main([str(path), "--gpu", "a100-80gb", "--no-cache", "--select", "LL008"])
    except SystemExit:
        pass
    return capsys.readouterr().out


def test_ll008_silent_on_a_spectrum_run(capsys):
    assert "LL008" not in _lint(capsys, FIXTURE)


def test_ll008_on_the_full_fine_tune(capsys, tmp_path):
    p = tmp_path / "full.yaml"
    p.write_text("\n".join(l for l in FIXTURE.read_text().splitlines()
                           if not l.startswith("spectrum_config_path")) + "\n")
    assert "LL008" in _lint(capsys, p)
