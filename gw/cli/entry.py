"""The ``gw`` command's entry point: the CLI, loaded with Python's cyclic GC paused (why:
gw/cli/gc_pause.py)."""

from __future__ import annotations

import gc


def main() -> None:
    gc.disable()
    from gw.cli.main import app  # noqa: PLC0415 - the point: imported with the GC paused

    gc.enable()
    app()
