"""lintlora works with no network and never tries to use one (issue 7, "offline").

Socket creation (other than local ``AF_UNIX`` sockets, which are not networking) and name
resolution are replaced by functions that record the attempt and fail. A whole run over the
shipped fixtures then has to succeed with no attempt recorded: failing is not enough, since a
linter that swallowed the error would still pass, so attempts are counted, not only refused.

The model-architecture lookup through a local Hugging Face cache is checked in both layouts
the hub library uses (``$HF_HOME/hub`` and ``$HF_HUB_CACHE``, each holding
``models--org--name/snapshots/<rev>/config.json``), with ``HOME`` pointed at an empty folder so
the developer's own cache cannot help, and for a model the built-in catalog does not know.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "fixtures")

TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
    "intermediate_size": 5632, "num_attention_heads": 32, "num_hidden_layers": 22,
    "num_key_value_heads": 4, "vocab_size": 32000, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "max_position_embeddings": 2048, "rms_norm_eps": 1e-05,
}
"""TinyLlama-1.1B's shapes (its hub config.json) under a hub id no catalog has."""
HUB_ID = "acme-offline-test/tiny-llama-7f3a"


def _tiny_params() -> int:
    """Parameters of TINY_CONFIG from its shapes: untied embeddings and lm_head, GQA
    attention (k/v projections of kv_heads x head_dim), gated MLP, two RMSNorms per layer."""
    c = TINY_CONFIG
    h, inter, layers, vocab = (c["hidden_size"], c["intermediate_size"],
                               c["num_hidden_layers"], c["vocab_size"])
    kv = c["num_key_value_heads"] * h // c["num_attention_heads"]
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * inter + 2 * h
    return 2 * vocab * h + layers * per_layer + h


# a batch of 8 makes the activations set the peak, so LL001 reports (at batch 4 a full
# fine-tune of this model peaks at the optimizer step and checkpointing saves under 10%)
SCRIPT = textwrap.dedent(f"""\
    from transformers import AutoModelForCausalLM, TrainingArguments, Trainer
    model = AutoModelForCausalLM.from_pretrained("{HUB_ID}")
    args = TrainingArguments(output_dir="o", per_device_train_batch_size=8,
                             gradient_checkpointing=False, bf16=True)
    Trainer(model=model, args=args).train()
    """)


class NetworkAttempt(OSError):
    """Raised instead of creating a network socket or resolving a name."""


@pytest.fixture
def no_network(monkeypatch):
    """Network sockets and DNS fail, and every attempt is recorded in the returned list."""
    attempts: list[str] = []
    real_socket = socket.socket

    class GuardedSocket(real_socket):
        def __init__(self, family=-1, type=-1, proto=-1, fileno=None):  # noqa: A002
            if fileno is None and family != getattr(socket, "AF_UNIX", object()):
                attempts.append(f"socket(family={family})")
                raise NetworkAttempt("network disabled by the test")
            super().__init__(family, type, proto, fileno)

    def refuse(name):
        def refused(*args, **kwargs):
            attempts.append(f"{name}{args!r}")
            raise NetworkAttempt(f"{name}: network disabled by the test")
        return refused

    monkeypatch.setattr(socket, "socket", GuardedSocket)
    for name in ("create_connection", "getaddrinfo", "gethostbyname", "gethostbyname_ex",
                 "gethostbyaddr", "create_server"):
        monkeypatch.setattr(socket, name, refuse(name))
    return attempts


@pytest.fixture
def hf_home(tmp_path, monkeypatch):
    """An empty HOME, no HF variables; returns a function that writes TINY_CONFIG into a
    cache of the given layout and sets the matching variable."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE",
                 "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)

    def install(layout: str):
        if layout == "HF_HOME":
            root = tmp_path / "hf-home"
            hub = root / "hub"
            monkeypatch.setenv("HF_HOME", str(root))
        else:
            hub = tmp_path / "hub-cache"
            monkeypatch.setenv("HF_HUB_CACHE", str(hub))
        org, name = HUB_ID.split("/")
        snapshot = hub / f"models--{org}--{name}" / "snapshots" / "0123456789abcdef"
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text(json.dumps(TINY_CONFIG))
        (hub / f"models--{org}--{name}" / "refs").mkdir()
        (hub / f"models--{org}--{name}" / "refs" / "main").write_text("0123456789abcdef")
        return hub

    return install


def _lint_json(*args) -> tuple[int, dict]:
    from click.testing import CliRunner

    from lintlora.cli_app import app

    run = CliRunner().invoke(app, [*args, "--format", "json"])
    assert run.exit_code in (0, 1), run.output
    return run.exit_code, json.loads(run.output)


def test_controls_the_guard_refuses_and_records(no_network):
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", 9))
    with pytest.raises(OSError):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    assert len(no_network) == 2


@pytest.mark.parametrize("layout", ["HF_HOME", "HF_HUB_CACHE"])
def test_architecture_from_the_local_hf_cache_offline(tmp_path, monkeypatch, no_network,
                                                      hf_home, layout):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT)
    _, before = _lint_json("train.py", "--gpu", "rtx3090")
    assert before["findings"][0]["estimate"]["model"] is None  # unknown without the cache
    assert "unknown model" in before["findings"][0]["estimate"]["note"]
    hf_home(layout)
    _, after = _lint_json("train.py", "--gpu", "rtx3090")
    (finding,) = after["findings"]
    estimate = finding["estimate"]
    assert finding["code"] == "LL001" and estimate["model"] == HUB_ID
    # the weights term is the cached config's parameter count in bf16 (2 bytes each)
    assert estimate["breakdown"]["weights"] == pytest.approx(2 * _tiny_params(), rel=0.01)
    assert estimate["peak_bytes"] > estimate["peak_after_fix_bytes"] > 0
    assert no_network == []


def test_whole_run_over_the_fixtures_offline(monkeypatch, no_network, hf_home):
    monkeypatch.chdir(REPO)
    paths = [p for p in ("fixtures/python", "fixtures/configs", "fixtures/cases",
                         "fixtures/rules", "fixtures/examples")
             if os.path.isdir(os.path.join(REPO, p))]
    code, doc = _lint_json(*paths, "--gpu", "a100-80gb")
    assert code == 1 and len(doc["files"]) > 50 and doc["findings"]
    assert not [e for e in doc["errors"] if e["code"] == "LL999"]
    assert any(f["estimate"] and f["estimate"]["peak_bytes"] for f in doc["findings"])
    assert no_network == []


SITECUSTOMIZE = textwrap.dedent("""\
    # installed by tests/test_offline.py: every Python process of the run (workers included)
    # refuses network sockets and DNS, and logs each attempt
    import os, socket, traceback
    _LOG = os.environ["LINTLORA_TEST_NETLOG"]
    _real = socket.socket

    def _note(what):
        with open(_LOG, "a") as handle:
            handle.write(what + "\\n" + "".join(traceback.format_stack(limit=8)) + "\\n")

    class _Guarded(_real):
        def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
            if fileno is None and family != getattr(socket, "AF_UNIX", None):
                _note(f"socket(family={family})")
                raise OSError("network disabled by the test")
            super().__init__(family, type, proto, fileno)

    def _refuse(name):
        def refused(*args, **kwargs):
            _note(f"{name}{args!r}")
            raise OSError(f"{name}: network disabled by the test")
        return refused

    socket.socket = _Guarded
    for _name in ("create_connection", "getaddrinfo", "gethostbyname", "gethostbyname_ex",
                  "gethostbyaddr", "create_server"):
        setattr(socket, _name, _refuse(_name))
""")


def test_the_command_in_a_process_without_network(tmp_path):
    """The real command, with the guard installed before anything is imported (through
    ``sitecustomize``, so worker processes get it too), on the fixtures and the HF cache."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "netlog.txt"
    home = tmp_path / "home"
    home.mkdir()
    hub = tmp_path / "hf" / "hub"
    org, name = HUB_ID.split("/")
    snapshot = hub / f"models--{org}--{name}" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(TINY_CONFIG))
    (tmp_path / "train.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    env.update(PYTHONPATH=os.pathsep.join([str(site), REPO]), HOME=str(home),
               HF_HOME=str(tmp_path / "hf"), LINTLORA_TEST_NETLOG=str(log))
    probe = subprocess.run([sys.executable, "-c", "import socket; socket.create_connection("
                            "('127.0.0.1', 9))"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and log.exists()  # control: the guard is active
    log.unlink()
    done = subprocess.run([sys.executable, "-m", "lintlora", str(tmp_path / "train.py"),
                           os.path.join(FIXTURES, "python"), os.path.join(FIXTURES, "configs"),
                           "--gpu", "rtx3090", "--format", "json"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert len(doc["files"]) > 20
    # only the script in tmp_path names HUB_ID: its estimate came from the cache
    assert any(f["estimate"] and f["estimate"]["model"] == HUB_ID for f in doc["findings"])
    assert not log.exists(), log.read_text()
