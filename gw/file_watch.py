"""Changes to one file, through saves by rename, deletes and symlink swaps.

The watch is on the file itself (through any symlinks), not on its directory: by default
gw's database lives beside its config, and a directory watch woke on every write to it
(3% of the instructions of a streamed request under load). After each change a new watch
is set on the path *before* the caller re-reads the file, so a save by rename or a
delete-and-write (a new inode) is followed, and whatever happened in between, that read
sees. A symlink re-pointed while its old target stays (``ln -sfn``, a Kubernetes
ConfigMap's swap of ``..data``, a release directory's ``current``) changes nothing the watch
sees: where the path leads through its symlinks is looked at once a second. So is
whether a missing file has appeared (not its directory, for the same reason as above).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

import watchfiles

DEBOUNCE_MS = 50  # a burst of writes closer than this is one change
POLL_S = 1.0  # how often a missing file, or where a symlink points, is looked at


class FileWatch:
    """``async with FileWatch(path) as changes:`` sets the watch; ``async for _ in
    changes:`` then wakes after each change to the file (re-read it then), until cancelled.

    The iteration raises what watchfiles raises when no watch can be set (the OS limit on
    watches)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._pending: asyncio.Task[None] | None = None

    async def __aenter__(self) -> FileWatch:
        self._pending = await _armed(self._path)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._pending is not None:
            self._pending.cancel()
            await asyncio.gather(self._pending, return_exceptions=True)

    def __aiter__(self) -> FileWatch:
        return self

    async def __anext__(self) -> None:
        assert self._pending is not None, "use FileWatch in async with"  # noqa: S101
        await self._pending
        self._pending = await _armed(self._path)


async def _armed(path: Path) -> asyncio.Task[None]:
    """A task that ends at the next change, once its watch is set."""
    task = asyncio.ensure_future(_next_change(path))
    try:
        # The task's first step sets the watch (watchfiles creates its notifier before
        # its first await): one turn of the loop and no change can slip by unseen.
        await asyncio.sleep(0)
    except BaseException:
        task.cancel()
        raise
    return task


async def _next_change(path: Path) -> None:
    try:
        await _first_change(path)
    except FileNotFoundError:  # no such file (yet): look for it now and then
        while not _exists(path):  # noqa: ASYNC110 -- polling the file system: no one to set an event
            await asyncio.sleep(POLL_S)


async def _first_change(path: Path) -> None:
    """Wait for watchfiles to report a change to ``path`` or, for a symlink, for it to
    point elsewhere (``ln -sfn``, which the old target never hears of); the watch is
    closed then."""
    pointed = _leads_to(path)
    changes = watchfiles.awatch(
        path,
        watch_filter=None,
        debounce=DEBOUNCE_MS * 4,
        step=DEBOUNCE_MS,
        recursive=False,
        rust_timeout=int(POLL_S * 1000) if pointed else 0,  # 0: no timeout
        yield_on_timeout=pointed is not None,
    )
    async with contextlib.aclosing(changes):
        async for changed in changes:
            if changed or _leads_to(path) != pointed:
                return


# Synchronous on purpose: a few stat calls, in the same step as the watch they go with.
def _exists(path: Path) -> bool:
    return os.path.exists(path)


def _leads_to(path: Path) -> str | None:
    """Where ``path`` leads through the symlinks on it, the file's or a directory's (a
    release layout's ``current/gw.yaml``); None when none of it is a symlink."""
    real = os.path.realpath(path)
    return real if real != os.path.abspath(path) else None
