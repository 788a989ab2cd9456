"""Issue 12, items 7 and 8: names and values from a pull request never become structure of a
report, and a file name that is not UTF-8 never stops one.

Hostile strings (a line break followed by ``::error``, ESC sequences, bidirectional overrides,
backtick runs around HTML, ``@org/team``, ``|``, ``##[`` legacy commands) are put where a pull
request can put them: file names (real files on disk for the end-to-end tests), environment
variable names read by a script, model ids, GPU names and messages. Each format is then checked
the way its reader would read it: the text report and GitHub annotations as the GitHub Actions
runner parses a log line (``actions/runner`` ``ActionCommand.TryParseV2``: ``::`` at the start
after leading white space; ``TryParse``: ``##[`` anywhere), the Markdown comment by rendering it
with markdown-it-py (CommonMark, plus GFM tables), SARIF by the schema and RFC 3986.
"""

from __future__ import annotations

import html.parser
import io
import json
import os
import re
import subprocess
import sys
import urllib.parse

import pytest

import engine_stubs
from lintlora.engine import RunResult
from lintlora.findings import FileError, Finding, MemoryFigures, Severity
from lintlora.report import display_path, render
from lintlora.report import escape
from lintlora.training_setup import Span

SCHEMA = os.path.join(os.path.dirname(__file__), "sarif-schema-2.1.0.json")

HOSTILE = [
    "nl\n::error file=.github/workflows/ci.yml,line=1::pwned",
    "crlf\r\n  ::warning::indented after CR LF",
    "esc\x1b[2J\x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
    "bidi\u202eyp.exe\u2066\u2069\u202a",
    "seps\u2028::error::after LS\u2029\x85::error::after NEL",
    "ticks``` <img src=x onerror=alert(1)> ```",
    "tick` <a href=\"https://evil.example\">click</a> `",
    "mention @org/team and @someone",
    "pipe | broken | cells",
    "# heading\n## another\n<script>alert(1)</script>",
    "legacy ##[error]annotation ##[stop-commands]tok",
    "::error::at the start",
    "raw <b>bold</b> [link](https://evil.example) ![img](https://evil.example/i.png)",
]
"""Strings a pull request controls: file names, environment-variable names, model ids."""

_RUNNER_COMMANDS = {"error", "warning", "notice", "debug", "group", "endgroup", "echo",
                    "add-mask", "add-matcher", "remove-matcher", "save-state", "set-output",
                    "set-env", "add-path", "stop-commands"}


@pytest.fixture(autouse=True)
def _stubs(monkeypatch):
    engine_stubs.install(monkeypatch)


def _result(names=HOSTILE) -> RunResult:
    """One finding per hostile name, the name in every field a pull request controls."""
    findings = []
    for i, name in enumerate(names, start=1):
        estimate = MemoryFigures(peak_bytes=30 * 2**30, peak_after_fix_bytes=20 * 2**30,
                                 gpu=f"GPU {name}", gpu_memory_bytes=24 * 2**30,
                                 model=f"org/{name}", note=f"env ${name} (unset)")
        findings.append(Finding("TS001", "bad-call", Severity.WARNING,
                                Span(f"dir/{name}.py", i, 1, i, 5),
                                f"model `{name}` from os.environ.get({name!r}): {name}",
                                fix=f"set `{name}` to {name}", estimate=estimate,
                                rests_on=(f"env {name}",)))
    errors = [FileError(f"err/{HOSTILE[0]}.py", f"cannot read {HOSTILE[2]}", "LL998", 2, 1)]
    notices = [FileError(f"note/{HOSTILE[3]}.yaml", f"not a training config: {HOSTILE[5]}",
                         "LL998")]
    return RunResult(files=[f.span.path for f in findings], findings=findings, errors=errors,
                     notices=notices, rules=engine_stubs.STUB_RULES)


def _render(result, fmt, **options) -> str:
    out = io.StringIO()
    render(result, fmt, out, **options)
    return out.getvalue()


def _log_lines(text: str) -> list[str]:
    """``text`` as lines of a job's log: the runner reads output with .NET's
    ``StreamReader.ReadLine`` (LF, CR, CR LF); Python's ``splitlines`` splits at those and
    more (VT, FF, FS, GS, RS, NEL, LS, PS), so nothing a stricter reader splits at is missed."""
    return text.splitlines()


def _raw_controls(text: str, allowed: str = "\n") -> list[str]:
    """Unprintable characters (controls, format characters such as the bidi overrides, line
    and paragraph separators, lone surrogates) other than ``allowed``."""
    return sorted({c for c in text if not c.isprintable() and c != " " and c not in allowed})


# ---- the escaping functions ----------------------------------------------------------------------

@pytest.mark.parametrize("char, shown", [
    ("\x1b", "\\x1b"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"), ("\x00", "\\x00"),
    ("\x7f", "\\x7f"), ("\x85", "\\x85"), ("\u202e", "<U+202E>"), ("\u2066", "<U+2066>"),
    ("\u200f", "<U+200F>"), ("\u2028", "<U+2028>"), ("\u2029", "<U+2029>"),
    ("\udcff", "\\xff"), ("\ud800", "<U+D800>"), ("\U000e0041", "<U+E0041>"),
])
def test_for_terminal_shows_every_unprintable_character(char, shown):
    assert escape.for_terminal(f"a{char}b") == f"a{shown}b"
    assert escape.for_terminal("plain ≈ é 漢字 ✓") == "plain ≈ é 漢字 ✓"  # printable: kept


def test_legacy_command_prefix_and_line_start_are_neutralised():
    assert "##[" not in escape.for_terminal("x ##[error]y ###[z")
    assert escape.terminal_line("  ::error::x") == "  \\x3a:error::x"
    assert escape.terminal_line("a ::error::x") == "a ::error::x"  # not at the start: no command
    assert json.loads(escape.json_dumps({"k": "##[error]x"})) == {"k": "##[error]x"}  # exact
    assert "##[" not in escape.json_dumps({"k": "##[error]x"})


def _code_text(markdown: str) -> list[str]:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parseInline(markdown)[0].children
    return [t.content for t in tokens if t.type == "code_inline"]


@pytest.mark.parametrize("content", [
    "a", "a`b", "`", "``", "`a", "a`", " a ", "a ", "  ", "``` x ```", "x `` y ` z",
    "<img src=x onerror=alert(1)>", "\\", "a\\", "`` `",
])
def test_markdown_code_span_is_read_back_by_commonmark_as_its_content(content):
    span = escape.markdown_code_span(content)
    assert _code_text(span) == [content]


def test_markdown_text_pairs_backticks_as_commonmark_does():
    # CommonMark: "``a`" is no code span (no closing run of two), so "`a`" after it is code
    text = escape.markdown_text("``not `a` <img src=x>")
    assert _code_text(text) == ["a"]
    assert "<img" not in _html(text)
    assert escape.markdown_text("@org/team #12").count("&#8203;") == 2
    # no bare address becomes a link by GFM's autolink extension (markdown-it's CommonMark
    # preset has no linkify to render it with): "://" and "www." never reach the output whole
    linked = escape.markdown_text("https://evil.example www.evil.example `https://in.code`")
    assert "https://evil" not in linked and "www.evil" not in linked
    assert _code_text(linked) == ["https://in.code"]


def test_sarif_uri_is_the_names_own_bytes_percent_encoded():
    assert escape.sarif_uri("d/\udcff a:b?#[].py") == "d/%FF%20a%3Ab%3F%23%5B%5D.py"
    assert urllib.parse.unquote_to_bytes(escape.sarif_uri("é/\udcfe.py")) == \
        os.fsencode("é/\udcfe.py")


def test_json_never_writes_nan_or_infinity():
    text = escape.json_dumps({"a": float("nan"), "b": [float("inf"), -float("inf"), 1.5]})
    assert json.loads(text, parse_constant=_refuse) == {"a": None, "b": [None, None, 1.5]}


def _refuse(name):
    raise AssertionError(f"not JSON: {name}")


# ---- the text report -------------------------------------------------------------------------------

def _assert_no_command(text: str) -> None:
    lines = _log_lines(text)
    assert not [line for line in lines if line.lstrip().startswith("::")]
    assert "##[" not in text
    assert not _raw_controls(text)


@pytest.mark.parametrize("color", [False, True])
def test_text_report_holds_no_workflow_command_nor_raw_control(color):
    result = _result()
    text = _render(result, "text", color=color)
    if color:  # rich's own styling codes are ESC sequences: judge the text without them
        text = re.sub(r"\x1b\[[0-9;]*m|\x1b\]8;[^\x1b]*\x1b\\", "", text)
    _assert_no_command(text)
    # every hostile name is still shown, escaped: one location line per finding
    located = [line for line in _log_lines(text) if " TS001 bad-call " in line]
    assert len(located) == len(result.findings)
    assert "dir/esc\\x1b[2J" in text and "bidi<U+202E>yp.exe" in text


def test_a_fix_with_lines_of_its_own_cannot_start_a_command():
    finding = Finding("TS001", "bad-call", Severity.WARNING, Span("a.py", 1, 1), "m",
                      fix="first\n  ::error file=x::second\n##[error]third")
    text = _render(RunResult(files=["a.py"], findings=[finding]), "text")
    _assert_no_command(text)
    assert "second" in text and "third" in text


# ---- GitHub annotations ------------------------------------------------------------------------------

def _parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """A log line as the runner parses it (``ActionCommand.TryParseV2``, ``UnescapeProperty``,
    ``UnescapeData``)."""
    message = line.lstrip()
    end = message.index("::", 2)
    info = message[2:end]
    name, _, props_text = info.partition(" ")
    props = {}
    for pair in filter(None, props_text.strip().split(",")):
        key, value = pair.split("=", 1)
        props[key] = (value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":")
                      .replace("%2C", ",").replace("%25", "%"))
    data = message[end + 2:].replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")
    return name, props, data


def test_github_output_is_one_command_per_finding_error_and_notice():
    result = _result()
    text = _render(result, "github")
    lines = _log_lines(text)
    commands = [line for line in lines if line.lstrip().startswith("::")]
    assert len(commands) == len(result.findings) + len(result.errors) + len(result.notices)
    assert len(lines) == len(commands) + 1  # and the plain summary line, nothing else
    assert lines[-1].startswith("lintlora: ")
    assert "##[" not in text and not _raw_controls(text)
    for command, finding in zip(commands, result.findings):
        name, props, data = _parse_command(command)
        assert name == "warning"
        assert set(props) <= {"file", "line", "endLine", "col", "endColumn", "title"}
        assert props["title"] == "TS001 bad-call" and props["line"] == str(finding.span.line)
        # the file property is the name, line breaks included (so the annotation lands on
        # the file); only what cannot be carried is shown escaped
        assert props["file"] == _shown_keeping_breaks(display_path(finding.span.path))
        assert not _raw_controls(props["file"] + data, allowed="\n\r")
        assert data.startswith(_shown_keeping_breaks(finding.message) + "\n")


def _shown_keeping_breaks(text: str) -> str:
    return "\r".join(escape.visible(piece, keep_newlines=True) for piece in text.split("\r"))


# ---- Markdown --------------------------------------------------------------------------------------

def _html(markdown_text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(markdown_text)


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text_outside_code: list[str] = []
        self._code = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._code += tag == "code"

    def handle_endtag(self, tag):
        self._code -= tag == "code"

    def handle_data(self, data):
        if not self._code:
            self.text_outside_code.append(data)


_OWN_TAGS = {"h3", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "a", "br", "sub",
             "details", "summary", "ul", "li", "strong", "pre"}
"""The elements lintlora's own Markdown makes (``<br>``, ``<sub>``, ``<details>`` it writes as
HTML itself; ``<pre>`` of an autofix's ``suggestion`` block)."""


def test_markdown_renders_no_html_heading_link_or_mention_of_its_inputs():
    result = _result()
    markdown = _render(result, "markdown")
    rendered = _html(markdown)
    parser = _Tags()
    parser.feed(rendered)
    tags = [tag for tag, _ in parser.tags]
    assert set(tags) <= _OWN_TAGS, set(tags) - _OWN_TAGS
    assert tags.count("h3") == 1 and not {"h1", "h2", "h4", "h5", "h6"} & set(tags)
    links = [attrs for tag, attrs in parser.tags if tag == "a"]
    assert links and all(attrs == {"href": "https://example.org/rules/TS001.html"}
                         for attrs in links)
    body = rendered.split("<tbody>")[1].split("</tbody>")[0]
    rows = body.split("</tr>")[:-1]
    assert len(rows) == len(result.findings)
    assert all(row.count("<td>") == 7 for row in rows)  # nothing split a row
    outside = "".join(parser.text_outside_code)
    assert not re.search(r"[@#](?!\u200b)[\w/-]", outside), "a mention or reference survived"
    assert not _raw_controls(rendered, allowed="\n\u200b")
    # every finding's location is one code span that reads as the escaped location
    codes = re.findall(r"<td><code>(.*?)</code></td>", body)
    assert len(codes) == len(result.findings)
    assert "dir/pipe | broken | cells.py:9:1" in [html.unescape(c) for c in codes]


# ---- SARIF ------------------------------------------------------------------------------------------

def _validate_sarif(doc):
    import jsonschema

    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


_URI_REFERENCE = re.compile(r"(?:[A-Za-z0-9\-._~/!$&'()*+,;=:@]|%[0-9A-F]{2})*")
"""RFC 3986 ``path-absolute``/``path-noscheme`` characters (section 3.3) and percent-encoded
octets (section 2.1)."""


def _sarif_checks(doc, paths) -> None:
    _validate_sarif(doc)
    (run,) = doc["runs"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in run["results"]]
    for uri, path in zip(uris, paths):
        assert _URI_REFERENCE.fullmatch(uri) and ":" not in uri.split("/")[0], uri
        assert urllib.parse.unquote_to_bytes(uri) == os.fsencode(display_path(path))
    for result in run["results"]:
        text = result["message"]["text"]
        assert not _raw_controls(text) and not re.search(r"(?<!\\)[\[\]]", text), text


def test_sarif_locations_are_uri_references_and_messages_are_shown_escaped():
    result = _result()
    text = _render(result, "sarif")
    assert "##[" not in text
    _sarif_checks(json.loads(text), [f.span.path for f in result.findings])


# ---- end to end: real files, the command line, a strict UTF-8 stdout --------------------------------

TRAIN = ("from transformers import TrainingArguments\n"
         "args = TrainingArguments(output_dir='o', gradient_checkpointing=False)\n")


def _lintlora(cwd, *args, output=None):
    """Run ``python -m lintlora`` in ``cwd`` with a strict UTF-8 standard output (as a CI log
    reader that refuses invalid UTF-8 would be); returns (status, report text, stderr)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", "NO_COLOR": "1",
           "LC_ALL": "C.UTF-8", "PYTHONUTF8": "1"}
    command = [sys.executable, "-m", "lintlora", "--no-cache", *args]
    if output:
        command += ["-o", output]
    done = subprocess.run(command, cwd=cwd, capture_output=True, env=env, timeout=120)
    report = done.stdout
    if output:
        with open(os.path.join(cwd, output), "rb") as handle:
            report = handle.read()
    return done.returncode, report.decode("utf-8"), done.stderr.decode("utf-8", "replace")


_ON_DISK = ["nl\n::error file=ci.yml::pwned", "esc\x1b[2J\x1b[31m", "bidi\u202eyp",
            "ticks`` <img src=x onerror=alert(1)> ``", "@someone | x", "##[error]legacy"]


@pytest.fixture
def hostile_tree(tmp_path):
    """A folder of training scripts with hostile names, one named by bytes that are not
    UTF-8 (Linux allows any byte but ``/`` and NUL in a name)."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in _ON_DISK:
        (root / f"{name}.py").write_text(TRAIN, encoding="utf-8")
    with open(os.path.join(os.fsencode(root), b"\xff\xfe.py"), "wb") as handle:
        handle.write(TRAIN.encode())
    return root


@pytest.mark.parametrize("fmt", ["text", "github", "markdown", "sarif", "json"])
@pytest.mark.parametrize("to_file", [False, True])
def test_hostile_names_on_disk_through_the_command_line(hostile_tree, fmt, to_file):
    status, report, stderr = _lintlora(hostile_tree, "--format", fmt, ".",
                                       output="report.out" if to_file else None)
    assert status == 1, stderr  # findings; never 2 ("internal error")
    assert "internal error" not in stderr and "Traceback" not in stderr
    n_files = len(_ON_DISK) + 1
    if fmt == "text":
        _assert_no_command(report)
        assert "\\xff\\xfe.py:2:" in report
        assert sum(" LL001 " in line for line in _log_lines(report)) == n_files
    elif fmt == "github":
        lines = _log_lines(report)
        commands = [line for line in lines if line.lstrip().startswith("::")]
        assert len(commands) == n_files and len(lines) == n_files + 1
        assert "##[" not in report and not _raw_controls(report)
        assert any(_parse_command(c)[1]["file"] == "\\xff\\xfe.py" for c in commands)
    elif fmt == "markdown":
        rendered = _html(report)
        parser = _Tags()
        parser.feed(rendered)
        assert {tag for tag, _ in parser.tags} <= _OWN_TAGS
        rows = rendered.split("<tbody>")[1].split("</tbody>")[0].split("</tr>")[:-1]
        assert len(rows) == n_files and all(row.count("<td>") == 7 for row in rows)
        assert "\\xff\\xfe.py" in rendered
        assert not re.search(r"@(?!\u200b)\w", "".join(parser.text_outside_code))
    elif fmt == "sarif":
        doc = json.loads(report)
        paths = [os.fsdecode(urllib.parse.unquote_to_bytes(
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]))
            for r in doc["runs"][0]["results"]]
        _sarif_checks(doc, paths)
        assert "%FF%FE.py" in {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                               for r in doc["runs"][0]["results"]}
    else:  # JSON stays exact: the names as Python reads them
        doc = json.loads(report, parse_constant=_refuse)
        assert "\udcff\udcfe.py" in doc["files"] and f"{_ON_DISK[0]}.py" in doc["files"]


def test_environment_variable_names_and_model_ids_from_a_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import os\n"
        "from transformers import AutoModelForCausalLM, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained(\n"
        "    os.environ.get('X\\n::error file=y.py::env\\x1b[2J\\u202e'))\n"
        "other = AutoModelForCausalLM.from_pretrained('org/m\\n::error::id\\x1b[2J @org/team')\n"
        "args = TrainingArguments(output_dir='o', gradient_checkpointing=False,\n"
        "    per_device_train_batch_size=int(os.environ['B\\n##[error]b\\x1b]8;;x']))\n",
        encoding="utf-8")
    for args in (["--show-setup"], ["--format", "text"], ["--format", "github"]):
        status, report, stderr = _lintlora(tmp_path, *args, "train.py")
        assert status in (0, 1), stderr
        assert "##[" not in report and not _raw_controls(report), args
        commands = [line for line in _log_lines(report) if line.lstrip().startswith("::")]
        if args[-1] == "github":  # lintlora's own commands only: one per finding
            assert all(_parse_command(c)[0] in ("error", "warning", "notice") for c in commands)
            assert len(commands) == len(_log_lines(report)) - 1
        else:
            assert not commands, args
    status, report, _ = _lintlora(tmp_path, "--format", "markdown", "train.py")
    parser = _Tags()
    parser.feed(_html(report))
    assert {tag for tag, _ in parser.tags} <= _OWN_TAGS
    assert not re.search(r"@(?!\u200b)\w", "".join(parser.text_outside_code))


def test_estimate_prints_a_hostile_model_id_escaped(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "from transformers import AutoModelForCausalLM, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained(\n"
        "    '::error file=x.py::id\\x1b[2J\\u202e ##[error]legacy')\n"
        "args = TrainingArguments(output_dir='o', per_device_train_batch_size=4)\n",
        encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "lintlora", "estimate", "train.py",
                           "--params", "7B"], cwd=tmp_path, capture_output=True, env=env,
                          timeout=120)
    report = done.stdout.decode("utf-8")
    assert done.returncode == 0, done.stderr
    assert "id\\x1b[2J<U+202E>" in report  # the title names the model, escaped
    _assert_no_command(report)


def test_a_configuration_error_on_stderr_names_the_file_escaped(tmp_path):
    """stderr is in the CI log too: a ``pyproject.toml`` in a folder whose name holds a line
    break and ``::error`` is named in the usage error without starting a command."""
    folder = tmp_path / "c\n::error file=a.py::cfg\x1b[2J"
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[tool.lintlora\nx = 1\n", encoding="utf-8")
    (folder / "t.py").write_text(TRAIN, encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "lintlora", "--no-cache", str(folder / "t.py")],
                          capture_output=True, env=env, timeout=120)
    stderr = done.stderr.decode("utf-8")
    assert done.returncode == 2 and "invalid TOML" in stderr
    _assert_no_command(stderr)
    assert "c\\n::error file=a.py::cfg\\x1b[2J" in stderr


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_and_sarif_stay_strict_json_with_non_finite_figures(fmt):
    figures = MemoryFigures(peak_bytes=float("nan"), peak_after_fix_bytes=float("inf"),
                            gpu_memory_bytes=24 * 2**30, breakdown={"weights": -float("inf")})
    finding = Finding("TS001", "bad-call", Severity.WARNING, Span("a.py", 1, 1), "m",
                      estimate=figures)
    text = _render(RunResult(files=["a.py"], findings=[finding], rules=engine_stubs.STUB_RULES),
                   fmt)
    doc = json.loads(text, parse_constant=_refuse)
    if fmt == "sarif":
        _validate_sarif(doc)
        assert doc["runs"][0]["results"][0]["properties"]["estimate"]["peak_bytes"] is None
    else:
        assert doc["findings"][0]["estimate"]["peak_bytes"] is None


def test_a_non_utf8_name_is_cached_and_served_from_the_cache(tmp_path):
    """The results cache (on by default) must store and give back a result whose path is not
    UTF-8: it was the first place such a name stopped every format ("internal error")."""
    root = tmp_path / "repo"
    root.mkdir()
    with open(os.path.join(os.fsencode(root), b"\xff.py"), "wb") as handle:
        handle.write(TRAIN.encode())
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", "NO_COLOR": "1"}
    cache = str(tmp_path / "cache")
    for _ in ("cold", "warm"):
        done = subprocess.run([sys.executable, "-m", "lintlora", "--cache-dir", cache, "."],
                              cwd=root, capture_output=True, env=env, timeout=120)
        assert done.returncode == 1, done.stderr.decode("utf-8", "replace")
        assert "\\xff.py:2:" in done.stdout.decode("utf-8")
    assert os.listdir(cache)  # it was cached


# ---- properties of the escaping functions, on any text ------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ANY = st.text(alphabet=st.sampled_from(list("a `\\|<>&*_[]#@:!\n\r\t\x1b\x85\u202e\u2028"
                                             "\udcff()$~")) | st.characters(), max_size=40)


@settings(max_examples=300, deadline=None)
@given(text=_ANY)
def test_any_text_is_one_code_span_read_back_as_shown(text):
    span = escape.markdown_code_span(text)
    if not text:
        assert span == ""
        return
    assert _code_text(span) == [escape.visible(text)]
    cell = _html("| h |\n|---|\n| " + escape.markdown_table_cell(span) + " |\n")
    assert cell.count("<td>") == 1 and cell.count("<code>") == 1


@settings(max_examples=300, deadline=None)
@given(text=_ANY)
def test_any_message_renders_as_text_and_code_only(text):
    rendered = _html("x " + escape.markdown_text(text))
    parser = _Tags()
    parser.feed(rendered)
    assert {tag for tag, _ in parser.tags} <= {"p", "code", "br"}
    outside = "".join(parser.text_outside_code)
    assert not re.search(r"[@#](?!\u200b)", outside)


@settings(max_examples=300, deadline=None)
@given(text=_ANY)
def test_any_text_is_one_terminal_line_and_one_command(text):
    shown = escape.for_terminal(text)
    assert not _raw_controls(shown, allowed="") and "##[" not in shown
    assert len(_log_lines(escape.terminal_line(shown) or "x")) == 1
    assert not escape.terminal_line(shown).lstrip().startswith("::")
    line = f"::warning file={escape.for_github_command_property(text)}::" \
           f"{escape.for_github_command_data(text)}"
    assert len(_log_lines(line)) == 1
    name, props, data = _parse_command(line)
    assert name == "warning" and set(props) <= {"file"}
    assert data == _shown_keeping_breaks(text)
    # the runner trims the properties (``propertiesStr ... .Trim()``): trailing spaces go
    assert props.get("file", "") == data.rstrip(" ")


def test_show_setup_json_stays_strict_json_with_non_finite_values(tmp_path):
    """A script's ``1e400`` is ``inf`` to Python and ``float('nan')`` is NaN: ``--show-setup
    --format json`` wrote them as ``Infinity``/``NaN``, which no JSON parser must accept."""
    (tmp_path / "t.py").write_text(
        "from transformers import TrainingArguments\n"
        "args = TrainingArguments(output_dir='o', learning_rate=1e400, weight_decay=float('nan'))\n",
        encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    done = subprocess.run([sys.executable, "-m", "lintlora", "--no-cache", "--show-setup",
                           "--format", "json", "t.py"], cwd=tmp_path, capture_output=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout, parse_constant=_refuse)
    assert doc["setups"]
