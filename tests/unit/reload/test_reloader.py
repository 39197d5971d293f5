"""The reloader against a real file: valid, invalid, unchanged and watched edits."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gw.config import Snapshot, compile_snapshot, load_config
from gw.reload import AppliedConfig, Reloader

from e2e.waiting import await_until

GOOD = """
providers: [{name: mock, kind: mock}]
routes: [{name: chat, targets: [{provider: mock, model: m1}]}]
"""
BETTER = GOOD.replace("m1", "m2")
BROKEN = GOOD.replace("provider: mock", "provider: ghost")
ARMED = GOOD.replace("m1", "m0")


class Harness:
    def __init__(self, path: Path, **options: Any) -> None:
        self.snapshot = compile_snapshot(load_config(GOOD, str(path)), revision=1, source=str(path))
        self.revisions: list[tuple[str, str]] = []
        defaults: dict[str, Any] = {
            "explicit": True,
            "overrides": {},
            "current": lambda: self.snapshot,
            "apply": self.apply,
            "record_revision": self.record,
            "compile_config": lambda config, revision, source, digest: compile_snapshot(
                config, revision=revision, source=source
            ),
            "now": lambda: 1000.0,
        }
        self.reloader = Reloader(path=path, **{**defaults, **options})

    def apply(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    async def record(self, applied: AppliedConfig) -> int:
        self.revisions.append((applied.hash, applied.source))
        return len(self.revisions) + 1


def harness(tmp_path: Path, text: str = GOOD) -> tuple[Harness, Path]:
    path = tmp_path / "gw.yaml"
    path.write_text(text)
    return Harness(path), path


def model_of(snapshot: Any) -> str:
    return snapshot.routes["chat"].targets[0].model


def test_a_valid_edit_becomes_the_next_revision(tmp_path: Path) -> None:
    h, path = harness(tmp_path)
    path.write_text(BETTER)
    applied = asyncio.run(h.reloader.reload())
    assert applied is not None
    assert (applied.revision, model_of(h.snapshot)) == (2, "m2")
    assert h.revisions[0][1] == "file"
    assert (h.reloader.status.revision, h.reloader.status.reloads) == (2, 1)


def test_an_unchanged_config_applies_nothing(tmp_path: Path) -> None:
    h, path = harness(tmp_path)
    path.write_text(GOOD + "\n# only a comment\n")
    assert asyncio.run(h.reloader.reload()) is None
    assert h.revisions == []


def test_an_invalid_edit_keeps_service_and_says_why_until_fixed(tmp_path: Path) -> None:
    h, path = harness(tmp_path)
    path.write_text(BROKEN)
    assert asyncio.run(h.reloader.reload()) is None
    assert model_of(h.snapshot) == "m1"
    error = h.reloader.status.error
    assert error is not None
    assert str(path) in error
    assert "routes[0].targets[0].provider" in error
    assert "ghost" in error
    path.write_text(BETTER)
    asyncio.run(h.reloader.reload())
    assert h.reloader.status.error is None
    assert model_of(h.snapshot) == "m2"


def test_the_watch_sees_saves_by_rename_and_in_place_writes(tmp_path: Path) -> None:
    # The file differs from the running config: the watch applies it once it is set,
    # which tells the test that it is set (as the next test shows).
    h, path = harness(tmp_path, ARMED)

    async def go() -> None:
        watch = asyncio.create_task(h.reloader.watch())
        try:
            await until(lambda: model_of(h.snapshot) == "m0")
            # Save by rename, as many editors do.
            temp = tmp_path / ".gw.yaml.swp"
            temp.write_text(BETTER)
            os.replace(temp, path)
            await until(lambda: model_of(h.snapshot) == "m2")
            # In place, in several quick writes: the last one wins.
            with path.open("w") as file:
                file.write(GOOD[:20])
                file.flush()
                file.write(GOOD[20:].replace("m1", "m3"))
            await until(lambda: model_of(h.snapshot) == "m3")
        finally:
            watch.cancel()

    asyncio.run(go())


def test_an_edit_made_while_gw_started_is_applied_once_the_watch_is_set(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(BETTER)  # gw read GOOD at start; this edit came before the watch
    h = Harness(path, start_text=GOOD)

    async def go() -> None:
        watch = asyncio.create_task(h.reloader.watch())
        try:
            await until(lambda: model_of(h.snapshot) == "m2")
        finally:
            watch.cancel()

    asyncio.run(go())
    assert h.revisions[-1][1] == "file"


async def until(condition: Callable[[], bool]) -> None:
    await await_until(condition, "the change to be applied", interval=0.1)
