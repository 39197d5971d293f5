"""Streaming load: N chat streams at a small concurrency, timed by an aiohttp client.

Per stream: time to first token (the first frame carrying non-empty content), total time
(until ``data: [DONE]``) and the number of data frames. A stream fails when the status is
not 200, it carries an error event, or it ends without ``[DONE]``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import msgspec

from bench.upstream import CLIENT_KEY

_DONE = b"[DONE]"
_TIMEOUT = aiohttp.ClientTimeout(total=60)
_decode = msgspec.json.Decoder().decode


@dataclass(frozen=True)
class StreamSample:
    ttft_s: float | None
    total_s: float
    frames: int
    error: str | None  # None: a complete, well-formed stream


def frame_kind(payload: bytes) -> str:
    """``done``, ``error``, ``token`` (non-empty content) or ``other`` for one data frame."""
    if payload.strip() == _DONE:
        return "done"
    try:
        chunk: Any = _decode(payload)
    except msgspec.DecodeError:
        return "error"
    if not isinstance(chunk, dict) or "error" in chunk:
        return "error"
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and delta.get("content"):
            return "token"
    return "other"


async def _one(session: aiohttp.ClientSession, url: str, body: bytes) -> StreamSample:
    started = time.perf_counter()
    ttft: float | None = None
    frames = 0
    headers = {"content-type": "application/json", "authorization": f"Bearer {CLIENT_KEY}"}
    try:
        async with session.post(url, data=body, headers=headers) as response:
            if response.status != 200:
                await response.read()
                return StreamSample(
                    None, time.perf_counter() - started, 0, f"HTTP {response.status}"
                )
            async for line in response.content:
                if not line.startswith(b"data:"):
                    continue
                kind = frame_kind(line[5:])
                if kind == "done":
                    return StreamSample(ttft, time.perf_counter() - started, frames, None)
                if kind == "error":
                    return StreamSample(ttft, time.perf_counter() - started, frames, "error event")
                frames += 1
                if ttft is None and kind == "token":
                    ttft = time.perf_counter() - started
    except (aiohttp.ClientError, TimeoutError) as error:
        return StreamSample(ttft, time.perf_counter() - started, frames, type(error).__name__)
    return StreamSample(ttft, time.perf_counter() - started, frames, "ended without [DONE]")


async def _run(
    url: str, bodies: Callable[[int], bytes], count: int, concurrency: int
) -> list[StreamSample]:
    samples: list[StreamSample] = []
    remaining = count

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            samples.append(await _one(session, url, bodies(count - remaining - 1)))

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=_TIMEOUT) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    return samples


def run_streams(
    url: str, bodies: Callable[[int], bytes], count: int, concurrency: int
) -> list[StreamSample]:
    """Send ``count`` streaming requests, ``concurrency`` at a time, the ``i``-th with
    ``bodies(i)``; one sample each."""
    return asyncio.run(_run(url, bodies, count, max(1, concurrency)))
