"""Rules: one module per rule, registered through the ``lintlora.rules`` entry-point group.

Built-in rules are listed in ``pyproject.toml`` under ``[project.entry-points."lintlora.rules"]``
like any plugin's. :func:`load_rules` reads that group with ``importlib.metadata``; when lintlora
runs from a source tree that was never installed (no entry points), it falls back to
:data:`BUILTIN_RULES`, the same list.
"""
