"""The ``gw`` command's entry point: the CLI, with Python's cyclic GC paused while it loads.

A start allocates ~70k objects that live as long as the process (modules, classes, the
server's routes and signature models); the collector walked them 76 times during a
``gw serve`` start, ~30 ms of it. So collection is paused while the CLI loads and resumed
before the command runs; ``gw serve`` pauses it again until it listens, then freezes what
the start allocated out of every later collection (``resume_after_start``). The start's
few garbage cycles (~1.4k objects) are frozen with the rest: a collection to find them
would cost more start time than they hold memory.
"""

from __future__ import annotations

import gc


def main() -> None:
    gc.disable()
    from gw.cli.main import app  # noqa: PLC0415 - the point: imported with the GC paused

    gc.enable()
    app()


def resume_after_start() -> None:
    """Called once the server listens: what exists now stays for the process's life, so
    later collections skip it (``gc.freeze``), and collection resumes. Does nothing when
    the GC was not paused (the server run in-process by a test or another program)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
