"""``Reloader.adopt`` and the catch-up an admin write makes in a fleet: a revision another
gateway recorded is applied under its own number, its text written to this gateway's
file, nothing recorded; an older one, or one that does not load, changes nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from unit.reload.test_reloader import BETTER, BROKEN, GOOD, Harness, harness, model_of

from gw.errors import InternalError, PreconditionFailedError
from gw.reload import AppliedConfig
from gw.store.revisions import RevisionMovedError, StoredRevision

COMMENTED = "# the fleet's text, comments and all\n" + BETTER


def stored(revision: int, text: str | None) -> StoredRevision:
    return StoredRevision(
        revision=revision, time=1.0, source="admin", hash="h", content=text, redacted="{}"
    )


def test_a_newer_fleet_revision_is_applied_and_written_to_the_file(tmp_path: Path) -> None:
    h, path = harness(tmp_path)
    applied = asyncio.run(h.reloader.adopt(stored(5, COMMENTED)))
    assert applied is not None
    assert (h.snapshot.revision, model_of(h.snapshot)) == (5, "m2")
    assert path.read_text() == COMMENTED
    assert h.revisions == []  # the other gateway recorded it
    assert (h.reloader.status.revision, h.reloader.status.reloads) == (5, 1)
    # The watch then sees the file it wrote: the same config, nothing applied or recorded.
    assert asyncio.run(h.reloader.reload("file")) is None
    assert h.revisions == []


def test_a_revision_not_newer_than_the_running_one_changes_nothing(tmp_path: Path) -> None:
    h, path = harness(tmp_path)
    assert asyncio.run(h.reloader.adopt(stored(1, BETTER))) is None
    assert (h.snapshot.revision, model_of(h.snapshot), path.read_text()) == (1, "m1", GOOD)


@pytest.mark.parametrize("text", [BROKEN, None])
def test_a_revision_that_does_not_load_keeps_service(tmp_path: Path, text: str | None) -> None:
    h, path = harness(tmp_path)
    assert asyncio.run(h.reloader.adopt(stored(5, text))) is None
    assert (h.snapshot.revision, model_of(h.snapshot), path.read_text()) == (1, "m1", GOOD)
    assert h.reloader.status.error is not None


def test_an_edit_first_catches_up_so_a_stale_if_match_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(GOOD)

    async def newest() -> StoredRevision | None:
        return stored(5, BETTER) if h.snapshot.revision < 5 else None

    h = Harness(path, fleet_newest=newest)
    seen: list[tuple[int, str | None]] = []

    def based_on_revision_1(text: str | None) -> str:
        seen.append((h.snapshot.revision, text))
        if h.snapshot.revision != 1:
            raise PreconditionFailedError("stale")
        return text or ""

    with pytest.raises(PreconditionFailedError):
        asyncio.run(h.reloader.edit(based_on_revision_1))
    assert seen == [(5, BETTER)]  # the edit saw the fleet's revision and its text
    assert h.revisions == []


def test_an_edit_that_cannot_read_the_fleet_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(GOOD)

    async def unreachable() -> StoredRevision | None:
        raise ConnectionRefusedError("the state store is down")

    h = Harness(path, fleet_newest=unreachable)
    with pytest.raises(InternalError, match="nothing was written"):
        asyncio.run(h.reloader.edit(lambda text: BETTER))
    assert (path.read_text(), h.revisions, h.snapshot.revision) == (GOOD, [], 1)


def test_an_edit_overtaken_by_another_gateway_is_refused_and_the_file_restored(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(GOOD)

    async def caught_up() -> StoredRevision | None:
        return None

    async def overtaken(applied: AppliedConfig) -> int:
        assert applied.parent == 1  # the revision the edit was made from
        raise RevisionMovedError(1, 2)

    h = Harness(path, fleet_newest=caught_up, record_revision=overtaken)
    with pytest.raises(PreconditionFailedError, match="revision 2 was recorded by another"):
        asyncio.run(h.reloader.edit(lambda text: BETTER))
    assert (path.read_text(), h.snapshot.revision, h.reloader.status.error) == (GOOD, 1, None)
