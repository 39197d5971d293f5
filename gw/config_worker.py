"""A config reload's reading, parsing and validation, in a child process.

Measured at 5,000 routes on a 2-core machine: run in a thread, parsing held up the event
loop for 60-700 ms at a time (libyaml's composer keeps the GIL for long stretches, and the
garbage collector, walking the growing heap, runs with it held); the whole load took the
loop 1-7 s when run on it. In a child (``python -m gw.config_worker``) none of that
touches the server. The child sends back the validated ``Config`` as msgpack, its large
lists in chunks of ``CHUNK`` entries, which the server decodes one chunk per event loop
turn: a request waits at most one chunk (about a millisecond), whatever the config's size.

Protocol: one msgpack request on stdin (``_Request``), one msgpack reply on stdout
(``_Reply``); a ``ConfigError`` travels as its fields and is raised again here.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from gw.config import Config, ConfigError, config_hash
from gw.config.limits import ConfigLimits
from gw.config.redact import redacted_json
from gw.config.units import decode_unit, encode_unit
from gw.environment import LoadedConfig, read_config

CHUNK: Final = 100  # list entries decoded per event loop turn
_SPLIT: Final = ("providers", "models", "routes", "policies", "tenants")


class _Request(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    explicit: bool
    overrides: dict[str, Any]
    max_bytes: int


class _Problem(msgspec.Struct, frozen=True, kw_only=True):
    source: str
    path: str
    reason: str
    line: int | None


class _Reply(msgspec.Struct, frozen=True, kw_only=True):
    problem: _Problem | None = None
    crash: str | None = None  # an unexpected exception, as "Type: message"
    source: str = ""
    exists: bool = False
    text: str | None = None
    hash: str = ""
    redacted: str = ""  # gw/config/redact.py's JSON
    head: bytes = b""  # the Config without the _SPLIT lists
    chunks: dict[str, list[bytes]] = {}  # each _SPLIT list, CHUNK entries per blob


class ChildLoad(msgspec.Struct, frozen=True, kw_only=True):
    """What the child loaded: the config, its ``config_hash`` and its redacted JSON."""

    loaded: LoadedConfig
    hash: str
    redacted: str


class ConfigWorkerError(Exception):
    """The child process could not load the config (it crashed, or was killed)."""


async def load_in_child(
    path: Path, *, explicit: bool, overrides: Mapping[str, Any], limits: ConfigLimits
) -> ChildLoad:
    """``read_config`` in a child process, at a lower CPU priority than the server's.
    Raises ``ConfigError`` as ``read_config`` would, ``ConfigWorkerError`` when the child
    fails otherwise."""
    request = _Request(
        path=str(path), explicit=explicit, overrides=dict(overrides), max_bytes=limits.max_bytes
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gw.config_worker",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await process.communicate(msgspec.msgpack.encode(request))
    finally:
        if process.returncode is None:  # cancelled: the child must not outlive the reload
            process.kill()
            await process.wait()
    try:
        reply = msgspec.msgpack.decode(out, type=_Reply)
    except msgspec.DecodeError:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise ConfigWorkerError(
            f"the config loader process exited with status {process.returncode}: {last[0]}"
        ) from None
    if reply.problem is not None:
        problem = reply.problem
        raise ConfigError(problem.source, problem.path, problem.reason, problem.line)
    if reply.crash is not None:
        raise ConfigWorkerError(f"the config loader process failed: {reply.crash}")
    config = await _decode(reply)
    loaded = LoadedConfig(
        config=config, source=reply.source, path=path, exists=reply.exists, text=reply.text
    )
    return ChildLoad(loaded=loaded, hash=reply.hash, redacted=reply.redacted)


async def _decode(reply: _Reply) -> Config:
    """The reply's Config, one chunk of a list per event loop turn."""
    head = msgspec.msgpack.decode(reply.head, type=Config, dec_hook=decode_unit)
    lists: dict[str, tuple[Any, ...]] = {}
    for name, blobs in reply.chunks.items():
        kind = msgspec.structs.fields(Config)[_field_index(name)].type
        items: list[Any] = []
        for blob in blobs:
            await asyncio.sleep(0)
            items.extend(msgspec.msgpack.decode(blob, type=kind, dec_hook=decode_unit))
        lists[name] = tuple(items)
    return msgspec.structs.replace(head, **lists)


def _field_index(name: str) -> int:
    return [field.name for field in msgspec.structs.fields(Config)].index(name)


def _load(request: _Request) -> _Reply:
    limits = ConfigLimits(max_bytes=request.max_bytes)
    try:
        loaded = read_config(
            Path(request.path),
            explicit=request.explicit,
            overrides=request.overrides,
            limits=limits,
            plugins=True,
        )
    except ConfigError as error:
        problem = _Problem(
            source=error.source, path=error.path, reason=error.reason, line=error.line
        )
        return _Reply(problem=problem)
    config = loaded.config
    encode = msgspec.msgpack.Encoder(enc_hook=encode_unit).encode
    chunks = {
        name: [encode(entries[i : i + CHUNK]) for i in range(0, len(entries), CHUNK)]
        for name in _SPLIT
        if len(entries := getattr(config, name)) > CHUNK
    }
    head = msgspec.structs.replace(config, **dict.fromkeys(chunks, ()))
    return _Reply(
        source=loaded.source,
        exists=loaded.exists,
        text=loaded.text,
        hash=config_hash(config, request.overrides),
        redacted=redacted_json(config),
        head=encode(head),
        chunks=chunks,
    )


def main() -> None:
    gc.disable()  # a short-lived process: collecting would only slow the parse (~2x)
    with contextlib.suppress(OSError):  # requests first: the server keeps the CPU it needs
        os.nice(10)
    request = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=_Request)
    try:
        reply = _load(request)
    except Exception as exc:  # noqa: BLE001 -- reported to the server, which keeps serving
        reply = _Reply(crash=f"{type(exc).__name__}: {exc}")
    sys.stdout.buffer.write(msgspec.msgpack.encode(reply))


if __name__ == "__main__":
    main()
