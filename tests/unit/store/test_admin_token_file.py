"""The local admin token file: 0600 from its first byte, new at every write, replacing
(never writing through) what stood at its name, and refused when others may read it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gw.store.admin_token import (
    TOKEN_PREFIX,
    AdminTokenError,
    admin_token_path,
    read_admin_token,
    write_admin_token,
)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_written_owner_only_whatever_the_umask_and_read_back(tmp_path: Path) -> None:
    old = os.umask(0)  # the most permissive umask: the file must still be 0600
    try:
        token = write_admin_token(tmp_path)
    finally:
        os.umask(old)
    assert token.startswith(TOKEN_PREFIX)
    assert len(token) >= len(TOKEN_PREFIX) + 43  # 256 bits, base64url
    assert mode_of(admin_token_path(tmp_path)) == 0o600
    assert read_admin_token(tmp_path) == token
    assert [p.name for p in tmp_path.iterdir()] == ["admin-token"]  # no temp file left


def test_every_write_is_a_new_token(tmp_path: Path) -> None:
    first = write_admin_token(tmp_path)
    second = write_admin_token(tmp_path)
    assert first != second
    assert read_admin_token(tmp_path) == second


def test_a_looser_file_is_replaced_not_written_through(tmp_path: Path) -> None:
    path = admin_token_path(tmp_path)
    path.write_text("old\n")
    path.chmod(0o644)
    inode = path.stat().st_ino
    hard_link = tmp_path / "someone-elses-link"
    os.link(path, hard_link)  # a reader holding the old inode keeps the old text
    token = write_admin_token(tmp_path, make=lambda: "gw-local-new")
    assert token == "gw-local-new"
    assert path.stat().st_ino != inode
    assert mode_of(path) == 0o600
    assert hard_link.read_text() == "old\n"


def test_a_symlink_at_the_name_is_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("untouched")
    admin_token_path(tmp_path).symlink_to(target)
    write_admin_token(tmp_path)
    assert target.read_text() == "untouched"
    assert not admin_token_path(tmp_path).is_symlink()


def test_reading_refuses_a_file_others_may_read(tmp_path: Path) -> None:
    write_admin_token(tmp_path)
    admin_token_path(tmp_path).chmod(0o640)
    with pytest.raises(AdminTokenError, match=r"mode 0640.*restart gw serve") as refused:
        read_admin_token(tmp_path)
    assert "gw-local-" not in str(refused.value)  # never the token itself


def test_reading_refuses_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text("gw-local-x")
    real.chmod(0o600)
    admin_token_path(tmp_path).symlink_to(real)
    with pytest.raises(AdminTokenError, match="cannot read"):
        read_admin_token(tmp_path)


def test_no_file_is_none(tmp_path: Path) -> None:
    assert read_admin_token(tmp_path) is None
