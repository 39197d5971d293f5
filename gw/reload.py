"""Hot reload: the config file is watched, and each valid edit becomes the next snapshot.

An edit is read, parsed, validated and compiled off to the side; only a config that
passed every check replaces the running snapshot, in one assignment (requests already
running keep the snapshot they pinned: invariant 2). An edit whose resolved config hashes
the same as the running one (a touch, a comment, a save without changes) applies nothing.
An invalid edit leaves service unchanged; the failure (file, line, field, reason) is
logged and kept in ``status`` until a valid edit arrives.

The watch is on the file's directory, not the file (an editor's save by rename replaces
the file, and a watch on the old inode goes silent; DESIGN "Known traps"); events for
other files are ignored. Bursts (several quick writes, truncate-and-write) are debounced
by watchfiles, and a reload re-reads the file, so the last write always wins.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec
import watchfiles

from gw.config import Config, ConfigError, Snapshot, config_hash
from gw.environment import read_config

log = logging.getLogger("gw.reload")
DEBOUNCE_MS = 50  # a burst of writes closer than this is one change
RevisionSource = Literal["file", "admin", "rollback", "signal"]


class ReloadStatus(msgspec.Struct, kw_only=True):
    """What ``gw status`` and ``GET /admin/v1/config`` say about the config file."""

    path: str
    revision: int
    applied_at: float | None = None  # wall clock of the last applied revision
    error: str | None = None  # the last edit's failure, until a valid edit arrives
    error_at: float | None = None
    reloads: int = 0  # revisions applied since start
    failures: int = 0


class Reloader:
    """Loads the config file into new snapshots; see the module docstring."""

    def __init__(
        self,
        *,
        path: Path,
        explicit: bool,
        overrides: Mapping[str, Any],
        current: Callable[[], Snapshot],
        apply: Callable[[Snapshot], None],
        record_revision: Callable[[str, str], Awaitable[int]],
        compile_config: Callable[[Config, int, str], Snapshot],
        now: Callable[[], float],
    ) -> None:
        self._path = path
        self._explicit = explicit
        self._overrides = dict(overrides)
        self._current = current
        self._apply = apply
        self._record_revision = record_revision  # (hash, source) -> the new revision
        self._compile = compile_config  # (config, revision, source) -> snapshot, as at start
        self._now = now
        self._lock = asyncio.Lock()
        self.status = ReloadStatus(path=str(path), revision=current().revision)

    async def reload(self, source: RevisionSource = "file") -> Snapshot | None:
        """Apply the file as it is now; the new snapshot, or None when nothing changed
        or the edit is invalid (then ``status.error`` says why)."""
        async with self._lock:
            try:
                loaded = read_config(self._path, explicit=self._explicit, overrides=self._overrides)
            except ConfigError as error:
                self.status.error, self.status.error_at = str(error), self._now()
                self.status.failures += 1
                log.warning("config edit not applied, still serving revision %d: %s",
                            self._current().revision, error)  # fmt: skip
                return None
            self.status.error = self.status.error_at = None
            digest = config_hash(loaded.config)
            if digest == self._current().config_hash:
                return None
            revision = await self._record_revision(digest, source)
            snapshot = self._compile(loaded.config, revision, loaded.source)
            self._apply(snapshot)
            self.status.revision, self.status.applied_at = revision, self._now()
            self.status.reloads += 1
            log.info("config revision %d applied (%s)", revision, source)
            return snapshot

    async def watch(self) -> None:
        """Reload on every change to the file, until cancelled."""
        directory, name = self._path.parent, self._path.name
        if not directory.is_dir():
            log.warning("not watching %s: its directory does not exist", self._path)
            return

        def concerns_the_file(_change: watchfiles.Change, path: str) -> bool:
            return Path(path).name == name

        async for _changes in watchfiles.awatch(
            directory, watch_filter=concerns_the_file, debounce=DEBOUNCE_MS * 4, step=DEBOUNCE_MS
        ):
            try:
                await self.reload("file")
            except Exception as exc:  # the watch must outlive any one reload
                log.exception("reloading %s failed: %s", self._path, type(exc).__name__)


class WatchTask:
    """``Reloader.watch`` as a background task, started and stopped with the server; SIGHUP
    forces a reload (source ``signal``) whatever the watch saw."""

    def __init__(self, reloader: Reloader) -> None:
        self._reloader = reloader
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        self._spawn(self._reloader.watch())
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop = asyncio.get_running_loop()  # not on Windows, nor off the main thread
            loop.add_signal_handler(signal.SIGHUP, self._on_hangup)

    async def stop(self) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _on_hangup(self) -> None:
        self._spawn(self._reloader.reload("signal"))

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)  # a reference until done: the loop keeps only weak ones
        task.add_done_callback(self._tasks.discard)
