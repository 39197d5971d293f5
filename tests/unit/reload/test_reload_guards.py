"""What a reload must never do: fall back to the built-in default when the file goes,
record a revision it did not apply, report success over a failure, or let an admin edit
and a watched reload interleave."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from unit.reload.test_reloader import BETTER, BROKEN, GOOD, Harness, model_of

from gw.config import Config, ConfigError
from gw.reload import AppliedConfig, WatchTask
from gw.store.revisions import StoredRevision


def make(tmp_path: Path, **options: object) -> tuple[Harness, Path]:
    path = tmp_path / "gw.yaml"
    path.write_text(GOOD)
    return Harness(path, **options), path


@pytest.mark.parametrize("explicit", [True, False])
def test_a_deleted_config_file_keeps_the_running_config(tmp_path: Path, explicit: bool) -> None:
    h, path = make(tmp_path, explicit=explicit)
    path.unlink()

    assert asyncio.run(h.reloader.reload()) is None

    assert model_of(h.snapshot) == "m1"  # not the built-in mock default
    assert h.revisions == []
    error = h.reloader.status.error
    assert error is not None
    assert str(path) in error
    assert h.reloader.status.failures == 1


def test_a_config_that_fails_to_compile_is_not_recorded(tmp_path: Path) -> None:
    def refuse(config: Config, revision: int, source: str, digest: str) -> object:
        raise ValueError("catalog entry m2 is malformed")

    h, path = make(tmp_path, compile_config=refuse)
    path.write_text(BETTER)

    assert asyncio.run(h.reloader.reload()) is None

    assert h.revisions == []  # never a recorded revision that did not apply
    assert model_of(h.snapshot) == "m1"
    assert h.reloader.status.error == "ValueError: catalog entry m2 is malformed"


def test_a_failed_record_keeps_the_error_visible(tmp_path: Path) -> None:
    h, path = make(tmp_path)
    path.write_text(BROKEN)
    asyncio.run(h.reloader.reload())
    assert h.reloader.status.error is not None

    async def broken_store(applied: AppliedConfig) -> int:
        raise OSError("database is locked")

    h.reloader._record_revision = broken_store  # the store fails on the next edit
    path.write_text(BETTER)
    assert asyncio.run(h.reloader.reload()) is None

    assert h.reloader.status.error == "OSError: database is locked"
    assert h.reloader.status.failures == 2
    assert model_of(h.snapshot) == "m1"


def test_a_prepare_refusal_is_an_invalid_edit(tmp_path: Path) -> None:
    async def no_vault(config: Config) -> None:
        raise ConfigError("gw.yaml", "providers[0].api_key", "is vault:x, and the vault ...")

    h, path = make(tmp_path, prepare=no_vault)
    path.write_text(BETTER)

    assert asyncio.run(h.reloader.reload()) is None
    assert h.revisions == []
    assert "providers[0].api_key" in (h.reloader.status.error or "")


def test_an_edit_that_does_not_validate_leaves_the_file_untouched(tmp_path: Path) -> None:
    h, path = make(tmp_path)

    with pytest.raises(ConfigError, match="ghost"):
        asyncio.run(h.reloader.edit(lambda text: BROKEN))

    assert path.read_text() == GOOD
    assert h.revisions == []
    assert h.reloader.status.error is None  # a refused write is not a failed reload


def test_an_edit_and_a_watched_reload_do_not_interleave(tmp_path: Path) -> None:
    h, _path = make(tmp_path)

    async def race() -> None:
        await asyncio.gather(h.reloader.edit(lambda text: BETTER), h.reloader.reload("file"))

    asyncio.run(race())

    # The edit wrote and applied the file under the lock; the reload after it found
    # nothing new. Without the lock the watcher could apply the admin's edit as "file".
    assert [source for _, source in h.revisions] == ["admin"]
    assert model_of(h.snapshot) == "m2"


def test_an_edit_through_a_symlink_keeps_the_symlink(tmp_path: Path) -> None:
    target = tmp_path / "real" / "gw.yaml"
    target.parent.mkdir()
    target.write_text(GOOD)
    link = tmp_path / "gw.yaml"
    link.symlink_to(target)
    h = Harness(link)

    asyncio.run(h.reloader.edit(lambda text: BETTER))

    assert link.is_symlink()
    assert target.read_text() == BETTER


def test_sighup_is_ignored_once_the_watch_stops() -> None:
    async def cycle() -> None:
        h = Harness(Path("/nonexistent-dir/gw.yaml"))
        task = WatchTask(h.reloader)
        await task.start()
        await task.stop()

    previous = signal.getsignal(signal.SIGHUP)
    try:
        asyncio.run(cycle())
        # The default action would end a draining server.
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_a_deleted_config_file_can_be_rolled_back(tmp_path: Path) -> None:
    h, path = make(tmp_path)
    path.write_text(BETTER)
    asyncio.run(h.reloader.reload())  # revision 2 (m2)
    path.unlink()
    asyncio.run(h.reloader.reload())  # "the file is gone": still m2

    async def stored(revision: int) -> StoredRevision:
        return StoredRevision(
            revision=revision, time=0.0, source="start", hash="h", content=GOOD, redacted=None
        )

    h.reloader._stored_revision = stored
    applied = asyncio.run(h.reloader.rollback(1))

    assert applied is not None
    assert path.read_text() == GOOD
    assert model_of(h.snapshot) == "m1"
    assert h.reloader.status.error is None


def unusable_ca_file(tmp_path: Path) -> str:
    missing = tmp_path / "missing-ca.pem"
    return BETTER.replace(
        "providers: [{name: mock, kind: mock}]",
        "providers: [{name: mock, kind: mock}, {name: corp, kind: openai_compatible, "
        f"base_url: 'https://llm.corp.example/v1', tls: {{ca_file: '{missing}'}}}}]",
    )


def test_a_reload_naming_a_tls_file_gw_cannot_read_is_refused(tmp_path: Path) -> None:
    h, path = make(tmp_path)
    path.write_text(unusable_ca_file(tmp_path))

    assert asyncio.run(h.reloader.reload()) is None
    assert h.revisions == []
    assert model_of(h.snapshot) == "m1"
    assert "providers[1].tls.ca_file: cannot read" in (h.reloader.status.error or "")


def test_an_edit_naming_a_tls_file_gw_cannot_read_is_refused(tmp_path: Path) -> None:
    h, path = make(tmp_path)

    with pytest.raises(ConfigError, match=r"providers\[1\]\.tls\.ca_file: cannot read"):
        asyncio.run(h.reloader.edit(lambda text: unusable_ca_file(tmp_path)))
    assert path.read_text() == GOOD
