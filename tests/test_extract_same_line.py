"""Python extraction: ``;``-separated statements on one line are ordered one after another,
so an import (or an assignment) is seen by the statement that follows it on the same line."""

import textwrap

from lintlora.extract.python import extract_python

TAIL = '''\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"))
'''


def one(head: str, body: str = "trainer.train()\n"):
    src = textwrap.dedent(head) + TAIL + textwrap.dedent(body)
    (setup,) = extract_python("train.py", src)
    return setup


def test_from_import_and_call_on_one_line_gives_the_section():
    s = one('from peft import LoraConfig; cfg = LoraConfig(r=8, target_modules=["q_proj"])\n')
    assert s.lora is not None
    assert s.lora.r.value == 8 and s.lora.r.span.line == 1
    assert list(s.lora.target_modules.value) == ["q_proj"]


def test_import_and_call_on_one_line_in_a_loop_body_is_a_call_site():
    s = one("", """\
        for step in range(10):
            trainer.train()
            import torch; torch.cuda.empty_cache()
        """)
    (site,) = [c for c in s.calls if c.kind == "empty_cache"]
    assert site.qualified_name == "torch.cuda.empty_cache"
    assert site.in_loop and (site.span.line, site.span.column) == (6, 19)


def test_import_and_call_in_a_one_line_suite():
    s = one("", "for step in range(10): import torch; torch.cuda.empty_cache()\n")
    (site,) = [c for c in s.calls if c.kind == "empty_cache"]
    assert site.in_loop and (site.span.line, site.span.column) == (4, 38)


def test_assignments_on_one_line_apply_in_order():
    s = one("from peft import LoraConfig\nrank = 4; rank = 16; cfg = LoraConfig(r=rank)\n")
    assert s.lora.r.value == 16 and s.lora.r.span.line == 2


def test_use_before_import_on_the_same_line_stays_unresolved():
    s = one("cfg = LoraConfig(r=8); from peft import LoraConfig\n")
    assert s.lora is None
