"""lintlora.extract.pyidioms: helpers known by what they do (the "every linear layer" helper)."""

import textwrap

from lintlora.extract.python import extract_python
from lintlora.training_setup import Origin

SCRIPT = textwrap.dedent("""\
    import bitsandbytes as bnb
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    def find_all_linear_names(bits, model):
        cls = bnb.nn.Linear4bit if bits == 4 else (bnb.nn.Linear8bitLt if bits == 8 else torch.nn.Linear)
        lora_module_names = set()
        for name, module in model.named_modules():
            if isinstance(module, cls):
                names = name.split('.')
                lora_module_names.add(names[0] if len(names) == 1 else names[-1])
    {removal}
        return list(lora_module_names)

    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", load_in_4bit=True)
    modules = find_all_linear_names(4, model)
    model = get_peft_model(model, LoraConfig(r=64, target_modules=modules))
    Trainer(model=model, args=TrainingArguments(output_dir="o")).train()
    """)
REMOVAL = ("    if 'lm_head' in lora_module_names:  # needed for 16-bit\n"
           "        lora_module_names.remove('lm_head')")


def _targets(source: str):
    (setup,) = extract_python("t.py", source)
    return setup.lora.target_modules


def test_artidoro_qlora_helper_reads_as_all_linear():
    targets = _targets(SCRIPT.format(removal=REMOVAL))
    assert targets.value == "all-linear" and targets.origin is Origin.VARIABLE
    assert "find_all_linear_names()" in targets.source and "lm_head" in targets.source


def test_a_helper_that_keeps_the_output_layer_or_tests_another_class_stays_unknown():
    assert not _targets(SCRIPT.format(removal="")).known  # lm_head adapted too: more than all-linear
    conv = SCRIPT.format(removal=REMOVAL).replace(
        "cls = bnb.nn.Linear4bit if bits == 4 else (bnb.nn.Linear8bitLt if bits == 8 else "
        "torch.nn.Linear)", "cls = torch.nn.Conv1d")
    assert not _targets(conv).known
