"""The benchmarks: ``memstream bench …`` (``ops.bench.cmd``), the throw-away stacks they
run on, their reports and charts, and the quality harness (``ops.bench.quality``).

Their own packages (``EXTRA``) come with the ``bench`` extra, not with memstream itself.
``ops.bench.cmd`` only builds the parsers and imports none of them, so ``memstream``
works without the extra; the CLI checks ``missing()`` before a bench command runs.
"""

from __future__ import annotations

import importlib

EXTRA = ("matplotlib",)  # the report's PNG charts (ops.bench.charts); nothing else imports it
INSTALL = "install the [bench] extra: pip install 'memstream[bench]' (from a checkout: pip install -e ./server -e '.[bench]')"


def missing() -> list[str]:
    """The packages of the ``bench`` extra that cannot be imported here."""
    out = []
    for name in EXTRA:
        try:
            importlib.import_module(name)
        except ImportError:
            out.append(name)
    return out
