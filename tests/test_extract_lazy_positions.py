"""A file without training code is not given positions: the extractor decides from the one walk
that nothing in it is worth a span, and skips LibCST's code generation (the second most costly
step after the parse; `bench/stages.py` prints its share). Timings live in `bench/`, not here.
"""

import pytest

from lintlora.extract import _cstpos
from lintlora.extract.python import extract_python


@pytest.fixture
def positions_calls(monkeypatch):
    calls = []
    real = _cstpos.index_positions

    def counting(module, source):
        calls.append(source)
        return real(module, source)

    monkeypatch.setattr(_cstpos, "index_positions", counting)
    return calls


def test_plain_python_is_not_given_positions(positions_calls):
    source = "\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(250))
    assert extract_python("plain.py", source) == []
    assert positions_calls == []


def test_a_training_script_is_given_positions_once(positions_calls):
    source = ("from peft import LoraConfig\n"
              "config = LoraConfig(r=8, target_modules=['q_proj', 'v_proj'])\n")
    (setup,) = extract_python("train.py", source)
    assert setup.lora.r.value == 8
    assert setup.lora.r.span.line == 2
    assert len(positions_calls) == 1
