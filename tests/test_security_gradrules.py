"""Hostile input for the extraction LL009/LL011 read: the receiver of a ``register_forward_hook``
and the iterable of a parameter loop are matched by regular expressions on their source text,
which lintlora bounds to the last ``_RECEIVER_TAIL`` characters (lintlora.extract.python).
These paths are new with LL009/LL011, so the tests guard the bound rather than fail on the
code before them."""

from __future__ import annotations

import time

from rules_support import lint, settings_from_args

from lintlora.extract.python import _RECEIVER_TAIL, extract_python

HEAD = ("import torch\nfrom peft import LoraConfig, get_peft_model\n"
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n")


def test_a_huge_receiver_expression_is_matched_in_bounded_time(tmp_path):
    # many `get_input_embeddings(` openings, each followed by a run of spaces: quadratic for the
    # unbounded pattern, linear in the bounded tail
    n = 4000
    receiver = 'g("' + ("get_input_embeddings(" + " " * 20) * n + 'x")'  # inside a string: no nesting
    src = HEAD + f"{receiver}.register_forward_hook(hook)\n" + (
        "for p in (" + "model.parameters(" + " " * 50000 + ")):\n    p.data = p.data.float()\n")
    path = tmp_path / "hostile.py"
    path.write_text(src)
    start = time.perf_counter()
    result = lint(path, settings_from_args(""))
    elapsed = time.perf_counter() - start
    assert not [e for e in result.errors if e.code == "LL999"], result.errors
    assert elapsed < 30, elapsed
    [s] = extract_python("hostile.py", src)
    # the hook's receiver does not end with the embedding accessor: not an input hook
    assert not s.calls_of("enable_input_require_grads")


def test_the_bound_keeps_the_method_chain_visible():
    assert _RECEIVER_TAIL >= 100
    src = HEAD + ("(" + " " * 10000 + "model).get_input_embeddings().register_forward_hook(h)\n"
                  "model = get_peft_model(model, LoraConfig(r=8))\n")
    [s] = extract_python("t.py", src)
    assert len(s.calls_of("enable_input_require_grads")) == 1
