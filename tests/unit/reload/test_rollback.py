"""Reloader.rollback against a real file: restored text, refusals that leave it alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gw.config import Snapshot, compile_snapshot, load_config
from gw.errors import ConflictError, InvalidRequestError
from gw.reload import AppliedConfig, Reloader
from gw.store.revisions import StoredRevision

GOOD = """# ours: a rollback keeps this comment
providers: [{name: mock, kind: mock}]
routes: [{name: chat, targets: [{provider: mock, model: m1}]}]
"""
BETTER = GOOD.replace("m1", "m2")


class Harness:
    """A reloader whose revisions are kept in a dict, as the store would keep them."""

    def __init__(self, path: Path) -> None:
        path.write_text(GOOD)
        self.path = path
        self.snapshot = compile_snapshot(load_config(GOOD, str(path)), revision=1, source="t")
        self.stored: dict[int, StoredRevision] = {1: self.row(1, GOOD, "start")}
        self.reloader = Reloader(
            path=path,
            explicit=True,
            overrides={},
            current=lambda: self.snapshot,
            apply=self.apply,
            record_revision=self.record,
            compile_config=lambda config, revision, source, digest: compile_snapshot(
                config, revision=revision, source=source
            ),
            now=lambda: 1000.0,
            stored_revision=self.lookup,
        )

    @staticmethod
    def row(revision: int, text: str | None, source: str) -> StoredRevision:
        return StoredRevision(
            revision=revision, time=1.0, source=source, hash="h", content=text, redacted="{}"
        )

    def apply(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    async def record(self, applied: AppliedConfig) -> int:
        revision = max(self.stored) + 1
        self.stored[revision] = self.row(revision, applied.text, applied.source)
        return revision

    async def lookup(self, revision: int) -> StoredRevision | None:
        return self.stored.get(revision)


def test_rollback_restores_the_text_exactly_as_a_new_revision(tmp_path: Path) -> None:
    h = Harness(tmp_path / "gw.yaml")
    h.path.write_text(BETTER)
    asyncio.run(h.reloader.reload("file"))
    assert h.stored[2].content == BETTER
    applied = asyncio.run(h.reloader.rollback(1))
    assert applied is not None
    assert applied.revision == 3
    assert h.stored[3].source == "rollback"
    assert h.path.read_text() == GOOD  # comments included
    assert not [p for p in tmp_path.iterdir() if p.name != "gw.yaml"]  # no temp file left


def test_rollback_refusals_leave_the_file_alone(tmp_path: Path) -> None:
    h = Harness(tmp_path / "gw.yaml")
    h.stored[2] = h.row(2, None, "start")
    h.stored[3] = h.row(3, GOOD.replace("mock, model", "ghost, model"), "file")
    with pytest.raises(InvalidRequestError, match="no config revision 9"):
        asyncio.run(h.reloader.rollback(9))
    with pytest.raises(ConflictError, match="no stored file text"):
        asyncio.run(h.reloader.rollback(2))
    with pytest.raises(ConflictError, match="no longer loads"):
        asyncio.run(h.reloader.rollback(3))
    assert h.path.read_text() == GOOD
    assert h.snapshot.revision == 1
