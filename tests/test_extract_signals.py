"""What the Python extractor records for rules to tell real problems from look-alikes: values set
at launch, ``set_*`` helpers and assignments on parsed arguments, periodic ``if`` guards,
token-adding and hand-written count calls, how strong rank reads are as launch evidence, and
whether a trainer trains at all (the new-user trial, task J)."""

from __future__ import annotations

import textwrap

import pytest

from lintlora.extract.python import extract_python
from lintlora.training_setup import Origin

HEAD = textwrap.dedent("""\
    import os
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
    model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    """)


def one(body: str):
    (s,) = extract_python("t.py", HEAD + textwrap.dedent(body))
    return s


# ---- values set at launch ---------------------------------------------------------------------
def test_hf_argument_parser_library_defaults_are_command_line_options():
    s = one("""\
        (training_args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()
        Trainer(model=model, args=training_args).train()
        """)
    gc = s.training.gradient_checkpointing
    assert gc.value is False and gc.origin is Origin.ARGPARSE_DEFAULT
    assert gc.source.startswith("--gradient_checkpointing:") and "training_args.py" in gc.source


def test_a_json_file_the_script_names_stays_a_library_default(tmp_path):
    (tmp_path / "args.json").write_text('{"output_dir": "o", "bf16": true}')
    src = HEAD + textwrap.dedent("""\
        (training_args,) = HfArgumentParser((TrainingArguments,)).parse_json_file("args.json")
        Trainer(model=model, args=training_args).train()
        """)
    path = tmp_path / "t.py"
    path.write_text(src)
    (s,) = extract_python(str(path), src)
    assert s.training.bf16.origin is Origin.CONFIG_FILE
    assert s.training.gradient_checkpointing.origin is Origin.LIBRARY_DEFAULT


def test_a_trainer_class_from_the_authors_own_module_is_known_by_what_it_is_given(tmp_path):
    """Firefly's ``from component.trainer import LoRATrainer``: a class lintlora cannot see,
    given the model and the parsed TrainingArguments, is the trainer; its arguments (read from
    the JSON file) make the setup's training section."""
    (tmp_path / "args.json").write_text('{"output_dir": "o", "per_device_train_batch_size": 16,'
                                        ' "max_seq_length": 1024, "fp16": true}')
    src = HEAD + textwrap.dedent("""        from component.trainer import LoRATrainer
        from component.util import log_arguments
        (training_args,) = HfArgumentParser((TrainingArguments,)).parse_json_file("args.json")
        log_arguments(args=training_args)  # given the arguments but no model: not a trainer
        trainer = LoRATrainer(model=model, args=training_args)
        trainer.train()
        """)
    path = tmp_path / "t.py"
    path.write_text(src)
    (s,) = extract_python(str(path), src)
    assert s.training.per_device_train_batch_size.value == 16
    assert s.training.per_device_train_batch_size.origin is Origin.CONFIG_FILE
    assert s.model.name_or_path.value == "meta-llama/Llama-2-7b-hf"
    # with a recognised trainer in the file, an unknown class given the arguments is not one
    both = src.replace("trainer.train()", "trainer.train()\nTrainer(model=model, args=training_args)"
                       ".train()")
    path.write_text(both)
    assert len(extract_python(str(path), both)) == 1


def test_assignment_after_parsing_applies_to_the_parsed_arguments():
    s = one("""\
        model_args, training_args = HfArgumentParser((TrainingArguments, TrainingArguments)).parse_args_into_dataclasses()
        training_args.gradient_checkpointing = True
        Trainer(model=model, args=training_args).train()
        """)
    gc = s.training.gradient_checkpointing
    assert gc.value is True and gc.origin is Origin.LITERAL and gc.span.line == 8


@pytest.mark.parametrize("call, gc, batch", [
    ("args = args.set_training(learning_rate=1e-4, gradient_checkpointing=True)", True, 8),
    ("args.set_training(1e-4, 16, activation_checkpointing=True)", True, 16),
    # set_training resets what it is not given: the constructor's checkpointing is gone
    ("args = args.set_training(learning_rate=1e-4)", False, 8),
])
def test_set_training_assigns_every_field_it_covers(call, gc, batch):
    s = one(f"""\
        args = TrainingArguments(output_dir="o", per_device_train_batch_size=2, gradient_checkpointing=True)
        {call}
        Trainer(model=model, args=args).train()
        """)
    t = s.training
    assert t.gradient_checkpointing.value is gc
    assert t.per_device_train_batch_size.value == batch
    if not gc:
        assert t.gradient_checkpointing.origin is Origin.LIBRARY_DEFAULT
        assert "set_training" in t.gradient_checkpointing.source
        assert t.gradient_checkpointing.key_span.line == 8


def test_set_dataloader_sets_workers_and_a_later_assignment_wins():
    s = one("""\
        args = TrainingArguments(output_dir="o", dataloader_num_workers=2)
        args.set_dataloader(num_workers=32)
        args.per_device_train_batch_size = 3
        Trainer(model=model, args=args).train()
        """)
    assert s.training.dataloader_num_workers.value == 32
    assert s.training.per_device_train_batch_size.value == 3


def test_set_training_under_an_undecided_condition_is_unknown():
    s = one("""\
        args = TrainingArguments(output_dir="o", gradient_checkpointing=True)
        if fast_mode():
            args.set_training(learning_rate=1e-4)
        Trainer(model=model, args=args).train()
        """)
    assert not s.training.gradient_checkpointing.known


# ---- periodic guards --------------------------------------------------------------------------
LOOP = """\
    opt = torch.optim.AdamW(model.parameters())
    for step, batch in enumerate(loader):
        model(**batch).loss.backward()
        opt.step()
        {guard}
            torch.cuda.empty_cache()
    """


@pytest.mark.parametrize("guard, periodic", [
    ("if step % 100 == 0:", True),
    ("if (step + 1) % args.eval_every == 0:", True),
    ("if step == 0:", True),
    ("if not step % 50:", True),
    ("if step % 100 == 0 and step > 0:", True),
    ("if state.global_step == max_steps:", True),
    ("if step % 1 == 0:", False),          # every step
    ("if step % 100:", False),             # 99 steps in 100
    ("if step % 100 != 0:", False),
    ("if step > 10:", False),
    ("if loss_type == 'ce':", False),      # an equality, but not of a counter
    ("if epoch == 0:", False),             # every step of the first epoch
    ("if True:", False),
])
def test_periodic_guards(guard, periodic):
    s = one(LOOP.format(guard=guard))
    (call,) = s.calls_of("empty_cache")
    assert call.in_step_callback and call.periodic is periodic


def test_else_branch_of_a_modulo_test_is_not_periodic_and_a_divisor_variable_of_one_is():
    s = one("""\
        every = 1
        opt = torch.optim.AdamW(model.parameters())
        for step, batch in enumerate(loader):
            model(**batch).loss.backward()
            opt.step()
            if step % 10 == 0:
                pass
            else:
                torch.cuda.empty_cache()
            if step % every == 0:
                torch.cuda.empty_cache()
        """)
    assert [c.periodic for c in s.calls_of("empty_cache")] == [False, False]


def test_a_helper_called_only_under_a_periodic_guard_is_periodic():
    s = one("""\
        def flush():
            torch.cuda.empty_cache()
        opt = torch.optim.AdamW(model.parameters())
        for step, batch in enumerate(loader):
            model(**batch).loss.backward()
            opt.step()
            if step % 100 == 0:
                flush()
        """)
    (call,) = s.calls_of("empty_cache")
    assert call.in_step_callback and call.periodic


# ---- call kinds -------------------------------------------------------------------------------
def test_token_adding_and_hand_counted_trainable_parameters_are_recorded():
    s = one("""\
        tok.add_special_tokens({"pad_token": "<pad>"})
        tok.add_tokens(["<x>"])
        model.resize_token_embeddings(len(tok))
        n = sum(p.numel() for p in model.parameters() if p.requires_grad)
        total = 0
        for p in model.parameters():
            if p.requires_grad:
                total += p.numel()
        """)
    assert len(s.calls_of("add_tokens")) == 2
    assert len(s.calls_of("resize_token_embeddings")) == 1
    assert [c.span.line for c in s.calls_of("trainable_parameter_count")] == [10, 14]


def test_a_sum_without_requires_grad_is_not_a_trainable_count():
    s = one("n = sum(p.numel() for p in model.parameters())\n")
    assert not s.calls_of("trainable_parameter_count")


# ---- rank reads as launch evidence ------------------------------------------------------------
@pytest.mark.parametrize("body, kinds", [
    ('is_main = int(os.environ.get("RANK", 0)) == 0\nif is_main:\n    print("hi")\n', ["env-read"]),
    ('rank = os.environ["LOCAL_RANK"]\nprint(rank)\n', ["env-read"]),
    ('local_rank = int(os.environ.get("LOCAL_RANK", 0))\ntorch.cuda.set_device(local_rank)\n', ["env-rank"]),
    ('lr = int(os.environ["LOCAL_RANK"])\nm = AutoModelForCausalLM.from_pretrained("x", device_map={"": lr})\n',
     ["env-rank"]),
    ('ws = int(os.environ.get("WORLD_SIZE", 1))\nddp = ws != 1\nif ddp:\n    print("ddp")\n', ["env-rank"]),
    ('ws = int(os.environ.get("WORLD_SIZE", 1))\nga = 32 // ws\n', ["env-read"]),
])
def test_rank_reads_count_only_when_they_place_or_branch(body, kinds):
    s = one(body)
    assert [e.kind for e in s.launch if e.kind.startswith("env")] == kinds


# ---- does the trainer train? ------------------------------------------------------------------
@pytest.mark.parametrize("tail, training", [
    ("Trainer(model, args=TrainingArguments(output_dir='o')).evaluate()\n", False),
    ("t = Trainer(model, args=TrainingArguments(output_dir='o'))\nt.evaluate()\nt.predict(ds)\n", False),
    ("t = Trainer(model, args=TrainingArguments(output_dir='o'))\nt.train()\nt.evaluate()\n", True),
    # handed to a helper that lintlora cannot follow: may be trained there
    ("t = Trainer(model, args=TrainingArguments(output_dir='o'))\nrun(t)\n", True),
    ("t = Trainer(model, args=TrainingArguments(output_dir='o'))\nt.evaluate()\nhelper().train()\n", True),
])
def test_is_training_follows_the_trainer_calls(tail, training):
    assert one(tail).is_training is training


def test_empty_cache_keeps_the_device_the_script_names():
    """``torch.xpu/mps/npu.empty_cache()`` are empty_cache call sites named as written (LL006
    quotes the name), and an aliased ``torch`` resolves the same way."""
    from lintlora.extract.python import extract_python

    source = ("import torch as T\nfrom peft import LoraConfig, get_peft_model\n"
              "model = get_peft_model(model, LoraConfig(r=8))\n"
              "for batch in loader:\n    model(**batch).loss.backward()\n"
              "    T.xpu.empty_cache()\n    torch.mps.empty_cache()\n    T.cuda.empty_cache()\n")
    (setup,) = extract_python("loop.py", source)
    names = [(c.qualified_name, c.span.line) for c in setup.calls if c.kind == "empty_cache"]
    assert names == [("torch.xpu.empty_cache", 6), ("torch.cuda.empty_cache", 8)]
