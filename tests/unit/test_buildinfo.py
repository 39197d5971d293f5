"""gw.buildinfo: the build record's format, and what `gw version` reports from it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gw import __version__
from gw.buildinfo import (
    RECORD_NAME,
    BuildRecord,
    BuildRecordError,
    build_info,
    decode_record,
    encode_record,
    lock_digest,
    read_record,
)
from gw.cli.main import app

LOCK = b"msgspec==0.23.0 \\\n    --hash=sha256:00\n"
RECORD = BuildRecord(
    lock_sha256=hashlib.sha256(LOCK).hexdigest(),
    builder="pex 2.105.2",
    platforms=("manylinux2014_x86_64", "macosx_11_0_arm64"),
)


def make_zipapp_package(tmp_path: Path) -> Path:
    """gw's files as a zipapp installs them: the package, with the build record inside."""
    package = tmp_path / "site-packages" / "gw"
    package.mkdir(parents=True)
    (package / RECORD_NAME).write_bytes(encode_record(RECORD))
    return package


def make_checkout_package(tmp_path: Path) -> Path:
    """gw's files in a dev checkout: the package beside pyproject.toml and the lock."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'gw'\n")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "runtime.lock").write_bytes(LOCK)
    package = tmp_path / "gw"
    package.mkdir()
    return package


def test_lock_digest_is_the_sha256_of_the_file_bytes() -> None:
    assert lock_digest(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_a_record_round_trips() -> None:
    assert decode_record(encode_record(RECORD)) == RECORD


def test_encoding_is_stable_so_builds_are_reproducible() -> None:
    assert encode_record(RECORD) == encode_record(
        BuildRecord(
            lock_sha256=RECORD.lock_sha256,
            builder=RECORD.builder,
            platforms=RECORD.platforms,
        )
    )


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (b"not json", "not JSON"),
        (b"[]", "expected an object"),
        (b'{"lock_sha256": "abc", "builder": "pex", "platforms": []}', "lock_sha256"),
        (b'{"lock_sha256": "' + b"0" * 64 + b'", "platforms": []}', "builder"),
        (b'{"lock_sha256": "' + b"0" * 64 + b'", "builder": "pex", "platforms": "x"}', "platforms"),
    ],
)
def test_a_malformed_record_names_what_is_wrong(data: bytes, field: str) -> None:
    with pytest.raises(BuildRecordError, match=field):
        decode_record(data)


def test_no_record_outside_a_zipapp(tmp_path: Path) -> None:
    assert read_record(tmp_path) is None


def test_in_a_zipapp_the_record_decides_and_pex_names_the_file(tmp_path: Path) -> None:
    info = build_info({"PEX": "/opt/gw.pyz"}, make_zipapp_package(tmp_path))

    assert info.zipapp
    assert info.artifact == "/opt/gw.pyz"
    assert (info.lock_sha256, info.lock_source) == (RECORD.lock_sha256, "build record")
    assert info.version == __version__


def test_a_zipapp_run_without_pex_still_says_zipapp(tmp_path: Path) -> None:
    info = build_info({}, make_zipapp_package(tmp_path))

    assert (info.zipapp, info.artifact) == (True, None)


def test_in_a_checkout_the_lock_is_hashed_from_the_file(tmp_path: Path) -> None:
    info = build_info({"PEX": "/inherited/from/a/parent.pyz"}, make_checkout_package(tmp_path))

    assert (info.zipapp, info.artifact) == (False, None)
    assert (info.lock_sha256, info.lock_source) == (RECORD.lock_sha256, "checkout")


def test_elsewhere_the_lock_is_unknown(tmp_path: Path) -> None:
    info = build_info({}, tmp_path / "gw")

    assert (info.zipapp, info.lock_sha256, info.lock_source) == (False, None, None)


def test_this_checkout_reports_its_own_runtime_lock() -> None:
    root = Path(__file__).resolve().parents[2]
    lock = (root / "requirements" / "runtime.lock").read_bytes()

    info = build_info({})

    assert (info.zipapp, info.lock_source) == (False, "checkout")
    assert info.lock_sha256 == hashlib.sha256(lock).hexdigest()


@pytest.mark.parametrize("args", [["version"], ["--version"]])
def test_gw_version_prints_gw_and_the_version_first(args: list[str], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, args, env={"GW_HOME": str(tmp_path)})

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"gw {__version__}"
    assert lines[2].startswith("lock sha256:")
    assert lines[3] == "zipapp no"
    assert lines[4] == f"state dir {tmp_path}"
