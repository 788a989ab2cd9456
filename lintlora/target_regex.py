"""Compiling a string ``target_modules`` that a linted file writes, without a regex bomb.

peft reads a string ``target_modules`` as a regular expression and ``re.fullmatch``es it
against every module path, and lintlora does the same to count what it adapts (LL003, LL004,
the estimate). Python's ``re`` backtracks, and it has no time limit: a 60-byte script with
``target_modules=r"(.|.)*Z"`` or ``r"(.*)*Z"`` kept lintlora matching for longer than any CI
job (exponential in the path length), and five ``.*`` in a row take seconds per setup on a
70B model's few thousand paths (polynomial of degree five).

:func:`compile_target_pattern` parses the expression first (``re``'s own parser, nothing run)
and refuses the shapes that backtrack without bound, as :class:`UnsafePatternError` (a
``re.error``, which every caller already treats as "not a pattern lintlora can use"):

- a repetition (``*``, ``+``, ``?``, ``{m,n}``) inside another repetition that may repeat more
  than once, or an alternation (``a|b``) inside one: the same text can then be split in
  exponentially many ways (``(a+)+``, ``(.|.)*``, ``(a?a?)*``); an optional part (``?``) is no
  repetition of what it holds (``.*(?:\\.\\w+)?`` is matched);
- a backreference (``\\1``, ``(?P=name)``): matching with one is NP-hard in general;
- more than :data:`MAX_REPEATS` repetitions (``?`` included) in the whole expression (each
  one multiplies the work by up to the path length);
- an expression longer than :data:`MAX_PATTERN_CHARS` characters.

Real ``target_modules`` patterns (``.*\\.(q_proj|v_proj)$``,
``^(?!.*vision).*model\\.layers\\.\\d+\\.self_attn\\.(q|k|v|o)_proj``) have none of these. This
module is in the model layer; it imports nothing of lintlora.
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    from re import _constants as _sre_constants  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_constants  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = ["UnsafePatternError", "compile_target_pattern", "MAX_REPEATS", "MAX_PATTERN_CHARS"]

MAX_REPEATS = 4
"""Most repetitions in one expression (measured with the command line on Llama-2-70B: four
``.*`` in a row ending in a literal no path has cost about 0.6 s, five about 5.5 s; three
``.*`` and four ``.?`` about 0.5 s of matching)."""

MAX_PATTERN_CHARS = 1000
"""Longest expression compiled (real ones are under 200 characters)."""

_REPEATS = {getattr(_sre_constants, name) for name in
            ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_sre_constants, name)}
_GROUPREFS = {getattr(_sre_constants, name) for name in
              ("GROUPREF", "GROUPREF_IGNORE", "GROUPREF_LOC_IGNORE", "GROUPREF_UNI_IGNORE")
              if hasattr(_sre_constants, name)}
_BRANCH = _sre_constants.BRANCH
_SUBPATTERN = _sre_constants.SUBPATTERN
_ASSERTS = {_sre_constants.ASSERT, _sre_constants.ASSERT_NOT}
_ATOMIC = getattr(_sre_constants, "ATOMIC_GROUP", None)
_GROUPREF_EXISTS = _sre_constants.GROUPREF_EXISTS


class UnsafePatternError(re.error):
    """A valid regular expression that lintlora does not match, because matching it could
    take unbounded time; ``str(exc)`` says which shape."""


def compile_target_pattern(pattern: str) -> re.Pattern[str]:
    """``re.compile(pattern)``, after checking that matching it is bounded.

    Raises:
        UnsafePatternError: one of the shapes in the module docstring.
        re.error: not a valid regular expression (as ``re.compile`` raises it).
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UnsafePatternError(f"regular expression longer than {MAX_PATTERN_CHARS} "
                                 f"characters: not evaluated by lintlora")
    parsed = _sre_parse.parse(pattern)
    repeats = _check(parsed, False)
    if repeats > MAX_REPEATS:
        raise UnsafePatternError(f"regular expression with more than {MAX_REPEATS} repetitions "
                                 f"(matching it could take very long): not evaluated by lintlora")
    return re.compile(pattern)


def _check(items, in_repeat: bool, depth: int = 0) -> int:
    """The repetitions in the parsed ``items``; raises :class:`UnsafePatternError` on a
    nested repetition, an alternation inside a repetition, or a backreference."""
    if depth > 100:  # re's parser refuses deeper nesting long before this
        raise UnsafePatternError("regular expression nested too deeply: not evaluated by "
                                 "lintlora")
    count = 0
    for op, av in items:
        if op in _REPEATS:
            if in_repeat:
                raise UnsafePatternError("regular expression with a repetition inside a "
                                         "repetition (matching it can take exponential "
                                         "time): not evaluated by lintlora")
            # an optional part (``?``, ``{0,1}``: at most once) splits no text in several
            # ways by itself, so what it holds is as nested as the optional part is
            # (``.*(?:\.\w+)?`` is bounded; ``(?:\w+)?`` inside a ``*`` is not)
            count += 1 + _check(av[2], in_repeat or av[1] > 1, depth + 1)
        elif op == _BRANCH:
            if in_repeat:
                raise UnsafePatternError("regular expression with an alternation inside a "
                                         "repetition (matching it can take exponential time): "
                                         "not evaluated by lintlora")
            for branch in av[1]:
                count += _check(branch, in_repeat, depth + 1)
        elif op == _SUBPATTERN:
            count += _check(av[-1], in_repeat, depth + 1)
        elif op in _ASSERTS:
            count += _check(av[1], in_repeat, depth + 1)
        elif _ATOMIC is not None and op == _ATOMIC:
            count += _check(av, in_repeat, depth + 1)
        elif op == _GROUPREF_EXISTS:
            for sub in av[1:]:
                if sub is not None:
                    count += _check(sub, in_repeat, depth + 1)
        elif op in _GROUPREFS:
            raise UnsafePatternError("regular expression with a backreference: not evaluated "
                                     "by lintlora")
    return count
