"""The config file's watch on a real file system: in-place writes, saves by rename, an
editor's rename-and-write, a Kubernetes ConfigMap's symlink swap, ``ln -sfn``, a file
that appears later, and a change made the moment the caller is told of the previous one."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from gw.file_watch import FileWatch

from e2e.waiting import await_until

Step = Callable[[], None]


class Seen:
    """Counts the changes a ``FileWatch`` reports; ``on_change`` runs at the first."""

    def __init__(self, path: Path, on_change: Step | None = None) -> None:
        self.count = 0
        self.armed = asyncio.Event()
        self._path = path
        self._on_change = on_change

    async def run(self) -> None:
        async with FileWatch(self._path) as changes:
            self.armed.set()
            async for _ in changes:
                self.count += 1
                if self._on_change is not None:
                    on_change, self._on_change = self._on_change, None
                    on_change()  # no await in between: the watch must already be set

    async def after(self, change: Step) -> None:
        """Make ``change`` and wait until it is seen."""
        before = self.count
        change()
        await await_until(lambda: self.count > before, "the change to be seen")


def watching(path: Path, test: Callable[[Seen], Awaitable[None]], seen: Seen | None = None) -> None:
    async def go() -> None:
        watcher = seen or Seen(path)
        task = asyncio.create_task(watcher.run())
        try:
            await watcher.armed.wait()
            await test(watcher)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(go())


def test_in_place_writes_and_saves_by_rename_are_seen_again_and_again(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text("a: 1\n")

    def save_by_rename(text: str) -> Step:
        def save() -> None:
            temp = tmp_path / ".gw.yaml.tmp"
            temp.write_text(text)
            os.replace(temp, path)

        return save

    async def test(seen: Seen) -> None:
        await seen.after(lambda: path.write_text("a: 2\n"))
        await seen.after(save_by_rename("a: 3\n"))
        await seen.after(lambda: path.write_text("a: 4\n"))  # on the new inode
        await seen.after(save_by_rename("a: 5\n"))

    watching(path, test)


def test_an_editor_that_moves_the_file_away_then_writes_a_new_one(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text("a: 1\n")

    def vim_save() -> None:
        backup = tmp_path / "gw.yaml~"
        os.rename(path, backup)
        path.write_text("a: 2\n")
        backup.unlink()

    async def test(seen: Seen) -> None:
        await seen.after(vim_save)
        await seen.after(lambda: path.write_text("a: 3\n"))

    watching(path, test)


def test_a_configmap_symlink_swap(tmp_path: Path) -> None:
    """kubelet's layout: gw.yaml -> ..data/gw.yaml, ..data -> a timestamped directory,
    swapped by renaming a new symlink over ..data, the old directory then removed."""
    mount = tmp_path / "config"
    mount.mkdir()

    def version(name: str, text: str) -> None:
        directory = mount / name
        directory.mkdir()
        (directory / "gw.yaml").write_text(text)

    version("..v1", "a: 1\n")
    (mount / "..data").symlink_to("..v1")
    path = mount / "gw.yaml"
    path.symlink_to("..data/gw.yaml")

    def swap(old: str, new: str, text: str) -> Step:
        def go() -> None:
            version(new, text)
            (mount / "..data_tmp").symlink_to(new)
            os.replace(mount / "..data_tmp", mount / "..data")
            (mount / old / "gw.yaml").unlink()
            (mount / old).rmdir()

        return go

    async def test(seen: Seen) -> None:
        await seen.after(swap("..v1", "..v2", "a: 2\n"))
        await seen.after(swap("..v2", "..v3", "a: 3\n"))
        assert path.read_text() == "a: 3\n"

    watching(path, test)


def test_a_symlink_re_pointed_while_its_old_target_stays(tmp_path: Path) -> None:
    (tmp_path / "v1.yaml").write_text("a: 1\n")
    (tmp_path / "v2.yaml").write_text("a: 2\n")
    path = tmp_path / "gw.yaml"
    path.symlink_to("v1.yaml")

    def point_to(name: str) -> Step:
        def go() -> None:  # ln -sfn: a new link renamed over the old one
            (tmp_path / "gw.yaml.new").symlink_to(name)
            os.replace(tmp_path / "gw.yaml.new", path)

        return go

    async def test(seen: Seen) -> None:
        await seen.after(point_to("v2.yaml"))
        await seen.after(lambda: (tmp_path / "v2.yaml").write_text("a: 3\n"))
        await seen.after(point_to("v1.yaml"))

    watching(path, test)


def test_a_directory_symlink_on_the_path_re_pointed(tmp_path: Path) -> None:
    """A release layout: ``--config current/gw.yaml``, ``current`` moved to a new release."""
    for release in ("r1", "r2"):
        (tmp_path / release).mkdir()
        (tmp_path / release / "gw.yaml").write_text(f"release: {release}\n")
    (tmp_path / "current").symlink_to("r1")

    def point_to(release: str) -> Step:
        def go() -> None:  # ln -sfn r2 current.new && mv -T current.new current
            (tmp_path / "current.new").symlink_to(release)
            os.replace(tmp_path / "current.new", tmp_path / "current")

        return go

    async def test(seen: Seen) -> None:
        await seen.after(point_to("r2"))
        await seen.after(lambda: (tmp_path / "r2" / "gw.yaml").write_text("release: r2b\n"))
        await seen.after(point_to("r1"))

    watching(tmp_path / "current" / "gw.yaml", test)


def test_a_file_that_appears_later_then_changes(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"

    async def test(seen: Seen) -> None:
        await seen.after(lambda: path.write_text("a: 1\n"))
        await seen.after(lambda: path.write_text("a: 2\n"))

    watching(path, test)


def test_a_directory_removed_and_made_again(tmp_path: Path) -> None:
    directory = tmp_path / "config"
    directory.mkdir()
    path = directory / "gw.yaml"
    path.write_text("a: 1\n")

    def remove() -> None:
        path.unlink()
        directory.rmdir()

    def restore() -> None:
        directory.mkdir()
        path.write_text("a: 2\n")

    async def test(seen: Seen) -> None:
        await seen.after(remove)
        await seen.after(restore)
        await seen.after(lambda: path.write_text("a: 3\n"))

    watching(path, test)


def test_a_change_made_as_the_last_one_is_reported_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text("a: 1\n")
    seen = Seen(path, on_change=lambda: path.write_text("a: 3\n"))

    async def test(seen: Seen) -> None:
        await seen.after(lambda: path.write_text("a: 2\n"))
        await await_until(lambda: seen.count >= 2, "the write made at the first report")

    watching(path, test, seen)
