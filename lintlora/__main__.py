"""``python -m lintlora``: the same as the ``lintlora`` command."""

from lintlora.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
