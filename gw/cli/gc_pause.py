"""Python's cyclic GC paused while gw loads, and what a started server does about it.

A start allocates ~70k objects that live as long as the process (modules, classes, the
server's routes and signature models); the collector walked them 76 times during a
``gw serve`` start, ~30 ms of it. So the entry point (gw/cli/entry.py) pauses collection
while the CLI loads and resumes it before the command runs; ``gw serve`` pauses it again
until it listens, then freezes what the start allocated out of every later collection
(``resume_after_start``). The start's few garbage cycles (~1.4k objects) are frozen with
the rest: a collection to find them would cost more start time than they hold memory.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


def resume_after_start() -> None:
    """Called once the server listens: what exists now stays for the process's life, so
    later collections skip it (``gc.freeze``), and collection resumes. Does nothing when
    the GC was not paused (the server run in-process by a test or another program)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off while a config loads: a parse allocates ~20 objects per route,
    none of them garbage, and collections walking them took a third of a 5,000-route
    load. Left as found: ``gw serve`` keeps it off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
