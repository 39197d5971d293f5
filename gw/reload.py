"""Hot reload: the config file is watched, and each valid edit becomes the next snapshot.

An edit is read, parsed and validated in a child process (gw/config_worker.py: a large
config must not hold up requests), then compiled off to the side; only a config that
passed every check replaces the running snapshot, in one assignment (requests already
running keep the snapshot they pinned: invariant 2). An edit whose resolved config hashes
the same as the running one (a touch, a comment, a save without changes) applies nothing.
An invalid edit leaves service unchanged; the failure (file, line, field, reason) is
logged and kept in ``status`` until a valid edit arrives.

The watch (gw/file_watch.py) follows the file through saves by rename and symlink swaps
(DESIGN "Known traps"), and is set again before each re-read. Bursts (several quick
writes, truncate-and-write) are debounced, and a reload re-reads the file, so the last
write always wins.

Every applied revision is recorded with its source (``RevisionSource``): ``start`` (the
config gw started with), ``file`` (the watch saw an edit), ``admin`` (an admin API write
or ``POST /admin/v1/reload``), ``rollback`` (``POST /admin/v1/config/rollback``) or
``signal`` (SIGHUP). The record keeps the file's text exactly as it was read, so a
rollback restores it comments and all.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from gw.config import Config, ConfigError, Snapshot, config_hash, load_config
from gw.config.limits import ConfigLimits
from gw.config.loader import DEFAULT_LIMITS
from gw.config_worker import ChildLoad, load_in_child
from gw.environment import outside_problems, replace_file
from gw.errors import (
    ConflictError,
    InternalError,
    InvalidRequestError,
    PreconditionFailedError,
)
from gw.file_watch import FileWatch
from gw.store.revisions import Audit, RevisionMovedError, StoredRevision

log = logging.getLogger("gw.reload")
RevisionSource = Literal["start", "file", "admin", "rollback", "signal"]


class AppliedConfig(msgspec.Struct, frozen=True, kw_only=True):
    """What a new revision records."""

    config: Config
    hash: str
    source: RevisionSource
    text: str | None  # the file's text as read and applied; None: the built-in default
    redacted: str  # the config, redacted, as JSON (gw/config/redact.py)
    # In a fleet, an edit's: the revision it was made from; recorded only while that is
    # still the newest (else ``RevisionMovedError``).
    parent: int | None = None
    audit: Audit | None = None


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
    """Loads the config file into new snapshots; see the module docstring.

    Every change to the running snapshot (a watched edit, SIGHUP, an admin write, a
    rollback) runs under one lock, so an admin write's If-Match check, its file write and
    its reload see no other reload in between.
    """

    def __init__(
        self,
        *,
        path: Path,
        explicit: bool,
        overrides: Mapping[str, Any],
        current: Callable[[], Snapshot],
        apply: Callable[[Snapshot], None],
        record_revision: Callable[[AppliedConfig], Awaitable[int]],
        compile_config: Callable[[Config, int, str, str], Snapshot],
        now: Callable[[], float],
        stored_revision: Callable[[int], Awaitable[StoredRevision | None]] | None = None,
        prepare: Callable[[Config], Awaitable[None]] | None = None,
        start_text: str | None = None,
        limits: ConfigLimits = DEFAULT_LIMITS,
        on_applied: Callable[[Snapshot], None] | None = None,
        fleet_newest: Callable[[], Awaitable[StoredRevision | None]] | None = None,
    ) -> None:
        self._path = path
        # The file's text the running config was read from (None: no file, or unknown):
        # ``watch`` applies an edit made before it was set.
        self._start_text = start_text
        self._explicit = explicit
        self._overrides = dict(overrides)
        self._current = current
        self._apply = apply
        self._record_revision = record_revision  # -> the new revision number
        self._stored_revision = stored_revision  # for rollback; None: no rollback
        # (config, revision, source, hash) -> snapshot, as at start
        self._compile = compile_config
        self._now = now
        # Checks a new config against the world outside the file (the vault holds every
        # vault:NAME it names) and raises ConfigError when it does not hold.
        self._prepare = prepare
        self._limits = limits
        self._on_applied = on_applied  # after the swap: timers that follow the config re-arm
        # In a fleet (state.url): the newest revision any gateway recorded. An admin write
        # first catches up to it, so its If-Match and its edit are made against the
        # fleet's config, not this gateway's possibly older one.
        self._fleet_newest = fleet_newest
        self._lock = asyncio.Lock()
        self.status = ReloadStatus(path=str(path), revision=current().revision)

    async def reload(self, source: RevisionSource = "file") -> Snapshot | None:
        """Apply the file as it is now; the new snapshot, or None when nothing changed
        or the edit is invalid (then ``status.error`` says why)."""
        async with self._lock:
            return await self._reload(source)

    async def edit(
        self,
        change: Callable[[str | None], str],
        source: RevisionSource = "admin",
        audit: Audit | None = None,
    ) -> Snapshot | None:
        """Under the reload lock: read the file (None when it is gone), ``change`` its text
        (it may raise to refuse), check the result as a reload would (``ConfigError``, the
        file untouched), write it atomically and apply it, recording ``audit`` with the
        revision. Returns as ``reload``."""
        async with self._lock:
            parent = None
            if self._fleet_newest is not None:
                await self._catch_up(self._fleet_newest)
                parent = self._current().revision
            try:
                text: str | None = await asyncio.to_thread(self._path.read_text, encoding="utf-8")
            except FileNotFoundError:
                text = None  # a rollback puts a deleted file back
            except (OSError, UnicodeDecodeError) as exc:
                raise ConflictError(f"cannot read {self._path}: {exc}") from None
            new_text = change(text)
            config = await asyncio.to_thread(
                functools.partial(load_config, outside=outside_problems),
                new_text,
                str(self._path),
                self._overrides,
                self._limits,
            )
            await self._check_outside(config)
            await asyncio.to_thread(replace_file, self._path, new_text)
            try:
                return await self._reload(source, parent, audit)
            except RevisionMovedError as moved:
                # Another gateway recorded a revision after the catch-up: this edit is
                # based on a stale one. The file goes back; the fleet's revision follows.
                if text is not None:
                    await asyncio.to_thread(replace_file, self._path, text)
                raise PreconditionFailedError(
                    f"revision {moved.newest} was recorded by another gateway while this "
                    "write was made; read the config again and retry"
                ) from None

    async def rollback(self, revision: int) -> Snapshot | None:
        """Write revision ``revision``'s stored file text back to the config file and apply
        it as a new revision (source ``rollback``); None when it hashes the same as the
        running config. Raises ``InvalidRequestError`` for an unknown revision and
        ``ConflictError`` when it has no stored text or no longer loads (an environment
        variable it reads changed, say); the file is untouched then."""
        if self._stored_revision is None:
            raise ConflictError("this gateway keeps no config revisions to roll back to")
        stored = await self._stored_revision(revision)
        if stored is None:
            raise InvalidRequestError(
                f"there is no config revision {revision}; `gw config history` lists them",
                param="revision",
            )
        content = stored.content
        if content is None:
            raise ConflictError(
                f"revision {revision} has no stored file text (the built-in default, or "
                "recorded by an older gw), so it cannot be restored; edit the config file "
                "by hand (`gw config diff` shows what changed)",
                param="revision",
            )
        try:
            return await self.edit(lambda _text: content, "rollback")
        except ConfigError as error:
            raise ConflictError(
                f"revision {revision} no longer loads, the file is unchanged: {error}",
                param="revision",
            ) from None

    async def adopt(self, stored: StoredRevision) -> Snapshot | None:
        """Serve revision ``stored``, recorded by another gateway of the fleet, when it is
        newer than the running one: its text is written to this gateway's config file
        (so a restart, or the next local edit, starts from it) and applied under its own
        number, recording nothing. The new snapshot, or None when it is not newer, has
        no stored text, or does not load here (``status.error`` says why)."""
        async with self._lock:
            return await self._adopt(stored)

    async def _catch_up(self, newest: Callable[[], Awaitable[StoredRevision | None]]) -> None:
        try:
            stored = await newest()
        except Exception as error:  # noqa: BLE001 -- the store's driver errors, whichever engine
            raise InternalError(
                "cannot read the fleet's newest config revision from the state store "
                f"({type(error).__name__}: {error}); nothing was written, retry"
            ) from None
        if stored is not None:
            await self._adopt(stored)

    async def _adopt(self, stored: StoredRevision) -> Snapshot | None:
        running = self._current()
        if stored.revision <= running.revision:
            return None
        content = stored.content
        if content is None:  # the built-in default: nothing to write to the file
            reason = f"fleet revision {stored.revision} has no stored text to apply"
            self._failed(ConfigError(str(self._path), "", reason))
            return None
        try:
            config = await asyncio.to_thread(
                functools.partial(load_config, outside=outside_problems),
                content,
                str(self._path),
                self._overrides,
                self._limits,
            )
            await self._check_outside(config)
            await asyncio.to_thread(replace_file, self._path, content)
            # Hashed here as the watch hashes the file just written (equal: nothing to
            # apply, nothing recorded); the paths this gateway overrides are left out.
            digest = config_hash(config, self._overrides)
            snapshot = self._compile(config, stored.revision, str(self._path), digest)
        except Exception as error:  # noqa: BLE001 -- any failure keeps the running snapshot
            self._failed(error)
            return None
        self._swap(snapshot)
        log.info("config revision %d applied (fleet, %s)", stored.revision, stored.source)
        return snapshot

    def _swap(self, snapshot: Snapshot) -> None:
        self._apply(snapshot)
        if self._on_applied is not None:
            self._on_applied(snapshot)
        self.status.revision, self.status.applied_at = snapshot.revision, self._now()
        self.status.error = self.status.error_at = None
        self.status.reloads += 1

    async def _reload(
        self, source: RevisionSource, parent: int | None = None, audit: Audit | None = None
    ) -> Snapshot | None:
        try:
            child = await self._read()
            loaded, digest = child.loaded, child.hash
            if digest == self._current().config_hash:
                if source == "signal":  # SIGHUP also re-reads the vault (`gw vault set`)
                    await self._check_outside(loaded.config)
                    revision = self._current().revision
                    log.info("SIGHUP: the config is unchanged (revision %d); provider keys "
                             "from the vault, if it names any, were read again",
                             revision)  # fmt: skip
                self.status.error = self.status.error_at = None
                return None
            await self._check_outside(loaded.config)
            # Compiled before it is recorded, so a revision is never recorded unapplied.
            trial = self._compile(loaded.config, 0, loaded.source, digest)
            applied = AppliedConfig(
                config=loaded.config,
                hash=digest,
                source=source,
                text=loaded.text,
                redacted=child.redacted,
                parent=parent,
                audit=audit,
            )
            revision = await self._record_revision(applied)
        except RevisionMovedError:
            raise  # the edit's caller answers it (412)
        except Exception as error:  # noqa: BLE001 -- any failure keeps the running snapshot
            self._failed(error)
            return None
        snapshot = msgspec.structs.replace(trial, revision=revision)
        self._swap(snapshot)
        log.info("config revision %d applied (%s)", revision, source)
        return snapshot

    async def _read(self) -> ChildLoad:
        """The file's config and its hash, loaded in a child process (gw/config_worker.py):
        a large config is parsed without holding up a request."""
        running = self._current()
        if running.source == str(self._path) and not self._path.exists():
            # Never fall back to the built-in default: that would swap the user's
            # providers for the mock because a file was moved.
            raise ConfigError(
                str(self._path),
                "",
                f"the file is gone (deleted or moved); still serving revision "
                f"{running.revision}: put it back, or `gw config rollback {running.revision}`",
            )
        return await load_in_child(
            self._path, explicit=self._explicit, overrides=self._overrides, limits=self._limits
        )

    async def _edited_since_start(self) -> bool:
        """Whether the file is not (or no longer) what the running config was read from."""
        try:
            text = await asyncio.to_thread(self._path.read_text, encoding="utf-8")
        except FileNotFoundError:
            return self._start_text is not None
        except (OSError, UnicodeDecodeError):
            return True  # the reload says what is wrong with it
        return text != self._start_text

    async def _check_outside(self, config: Config) -> None:
        if self._prepare is not None:
            await self._prepare(config)

    def _failed(self, error: Exception) -> None:
        reason = str(error)
        if not isinstance(error, ConfigError):
            reason = f"{type(error).__name__}: {error}"
        self.status.error, self.status.error_at = reason, self._now()
        self.status.failures += 1
        log.warning("config edit not applied, still serving revision %d: %s",
                    self._current().revision, reason)  # fmt: skip

    async def watch(self) -> None:
        """Reload on every change to the file, until cancelled."""
        if not self._path.parent.is_dir():
            log.warning("not watching %s: its directory does not exist", self._path)
            return
        try:
            async with FileWatch(self._path) as changes:
                if await self._edited_since_start():
                    await self.reload("file")
                async for _ in changes:
                    try:
                        await self.reload("file")
                    except Exception as exc:  # the watch must outlive any one reload
                        log.exception("reloading %s failed: %s", self._path, type(exc).__name__)
        except Exception:  # say so rather than go silent
            log.exception(
                "no longer watching %s; edits apply on SIGHUP or POST /admin/v1/reload "
                "until gw restarts",
                self._path,
            )


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
            # Removing the handler restores the default action, which ends the process:
            # a SIGHUP while the server drains must not cut the drain short.
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _on_hangup(self) -> None:
        self._spawn(self._reloader.reload("signal"))

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)  # a reference until done: the loop keeps only weak ones
        task.add_done_callback(self._tasks.discard)
