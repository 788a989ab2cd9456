"""A torchtune config whose ``loss._component_`` is a loss lintlora does not know, in a recipe
that is no preference trainer, is estimated (issue 15 trial): pytorch/torchtune
recipes/configs/dev/3B_full_grpo.yaml (``torchtune.dev.grpo.loss.GRPOSimpleLoss``) raised
LL999 "AttributeError: 'NoneType' object has no attribute 'known'" in the estimator (the
missing ``training.extra["trainer"]`` read as a Setting) under LL008 with a GPU named.
"""

import json
from pathlib import Path

from lintlora.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "trial15" / "torchtune" / "3B_full_grpo.yaml"


def test_unknown_torchtune_loss_is_no_internal_error(capsys):
    try:
        main([str(FIXTURE), "--gpu", "a100-80gb", "--no-cache", "--format", "json"])
    except SystemExit:
        pass
    out = json.loads(capsys.readouterr().out)
    assert not [e for e in out["errors"] if e["code"] == "LL999"], out["errors"]


def test_estimate_names_the_unknown_loss():
    from estimate_support import estimate_json

    e = estimate_json(str(FIXTURE))
    assert any("GRPOSimpleLoss: not a loss lintlora knows" in a for a in e["assumptions"]), e["assumptions"]
