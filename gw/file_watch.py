"""Changes to one file, through saves by rename, deletes and symlink swaps.

The watch is on the file itself (its inode, through any symlinks), not on its directory:
by default gw's database lives beside its config, and a directory watch woke on every
write to it (about 5% of the CPU of a streamed request under load). A save by rename, a
delete-and-write or a Kubernetes ConfigMap's symlink swap leaves the old inode's watch
silent, so after each change a new watch is set on the path *before* the caller re-reads
the file: whatever happened in between, that read sees. While the file does not exist,
its directory is watched for it to appear.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import watchfiles

DEBOUNCE_MS = 50  # a burst of writes closer than this is one change


class FileWatch:
    """``async with FileWatch(path) as changes:`` sets the watch; ``async for _ in
    changes:`` then wakes after each change to the file (re-read it then), until cancelled.

    Raises what watchfiles raises when no watch can be set (the OS limit on watches)."""

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
    # The task's first step sets the watch (watchfiles creates its notifier before its
    # first await): one turn of the loop and no change can slip by unseen.
    await asyncio.sleep(0)
    return task


async def _next_change(path: Path) -> None:
    try:
        async for _ in _watch(path):
            return
    except FileNotFoundError:
        pass  # no such file (yet): wait for it to appear
    name = path.name
    async for _ in _watch(path.parent, lambda _change, changed: Path(changed).name == name):
        return


def _watch(
    target: Path, only: Callable[[watchfiles.Change, str], bool] | None = None
) -> AsyncIterator[set[tuple[watchfiles.Change, str]]]:
    return watchfiles.awatch(
        target, watch_filter=only, debounce=DEBOUNCE_MS * 4, step=DEBOUNCE_MS, recursive=False
    )
