"""What ``gw version`` reports: which gw, on which Python, from which lock, run how.

``scripts/build-zipapp`` writes a build record, ``gw/_build.json``, into the gw it bundles:
the sha256 of ``requirements/runtime.lock`` as bundled, the builder and the platforms. A
dev checkout has no record; there the lock hash is computed from the checkout's own
``requirements/runtime.lock``, so a venv and a zipapp built from the same lock print the
same hash.

Strategy: "runs from a zipapp" is decided by the build record, not by the environment.
Only the zipapp build writes the record and it travels with the running code, so it can
be neither inherited, like pex's ``PEX`` variable (which every child process of a zipapp
sees), nor faked by a script name that happens to end in ``.pyz``. ``PEX``, which pex sets
to the real path of the artifact it runs, only names the file when it is there.

Standard library only, and nothing runs at import: the build script loads this module
with a bare interpreter to write the record, so its format is defined once, here.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Literal

from gw import __version__

RECORD_NAME = "_build.json"
RUNTIME_LOCK = "requirements/runtime.lock"

LockSource = Literal["build record", "checkout"]


class BuildRecordError(ValueError):
    """A build record that is not what ``scripts/build-zipapp`` writes."""


@dataclass(frozen=True, kw_only=True)
class BuildRecord:
    """Facts fixed when the zipapp was built."""

    lock_sha256: str
    builder: str  # the tool and its version, e.g. "pex 2.105.2"
    platforms: tuple[str, ...]  # wheel platform tags bundled, e.g. "manylinux2014_x86_64"


@dataclass(frozen=True, kw_only=True)
class BuildInfo:
    version: str
    python: str
    executable: str
    lock_sha256: str | None  # None: neither a build record nor a checkout's lock
    lock_source: LockSource | None
    zipapp: bool
    artifact: str | None  # the zipapp's path, when the runner names it


def lock_digest(lock: bytes) -> str:
    """The lock hash: sha256 of the file's bytes, as hex."""
    return hashlib.sha256(lock).hexdigest()


def encode_record(record: BuildRecord) -> bytes:
    fields = {
        "lock_sha256": record.lock_sha256,
        "builder": record.builder,
        "platforms": list(record.platforms),
    }
    return (json.dumps(fields, indent=2, sort_keys=True) + "\n").encode()


def decode_record(data: bytes) -> BuildRecord:
    """Parse a build record; ``BuildRecordError`` says which field is wrong."""
    try:
        fields = json.loads(data)
    except ValueError as error:
        raise BuildRecordError(f"{RECORD_NAME}: not JSON ({error})") from None
    if not isinstance(fields, dict):
        raise BuildRecordError(f"{RECORD_NAME}: expected an object")
    lock_sha256, builder, platforms = (
        fields.get("lock_sha256"),
        fields.get("builder"),
        fields.get("platforms"),
    )
    if not isinstance(lock_sha256, str) or len(lock_sha256) != 64:
        raise BuildRecordError(f"{RECORD_NAME}: lock_sha256 must be 64 hex digits")
    if not isinstance(builder, str):
        raise BuildRecordError(f"{RECORD_NAME}: builder must be a string")
    if not isinstance(platforms, list) or not all(isinstance(p, str) for p in platforms):
        raise BuildRecordError(f"{RECORD_NAME}: platforms must be a list of strings")
    return BuildRecord(lock_sha256=lock_sha256, builder=builder, platforms=tuple(platforms))


def read_record(package: Traversable) -> BuildRecord | None:
    """The build record inside ``package`` (gw's own files), or None outside a zipapp."""
    try:
        data = package.joinpath(RECORD_NAME).read_bytes()
    except OSError:
        return None
    return decode_record(data)


def checkout_lock(package: Traversable) -> Path | None:
    """``requirements/runtime.lock`` of the checkout gw runs from, if it runs from one."""
    if not isinstance(package, Path):
        return None
    root = package.parent
    lock = root / RUNTIME_LOCK
    if (root / "pyproject.toml").is_file() and lock.is_file():
        return lock
    return None


def build_info(environ: Mapping[str, str], package: Traversable | None = None) -> BuildInfo:
    """Everything ``gw version`` prints; ``package`` defaults to gw's installed files."""
    package = package if package is not None else resources.files("gw")
    record = read_record(package)
    lock_sha256: str | None = None
    lock_source: LockSource | None = None
    if record is not None:
        lock_sha256, lock_source = record.lock_sha256, "build record"
    elif (lock := checkout_lock(package)) is not None:
        lock_sha256, lock_source = lock_digest(lock.read_bytes()), "checkout"
    artifact = environ.get("PEX") if record is not None else None
    return BuildInfo(
        version=__version__,
        python=platform.python_version(),
        executable=sys.executable,
        lock_sha256=lock_sha256,
        lock_source=lock_source,
        zipapp=record is not None,
        artifact=artifact or None,
    )
