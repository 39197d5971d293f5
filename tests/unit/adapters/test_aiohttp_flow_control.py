"""gw's aiohttp protocol resumes reading only after a pause (gw/adapters/aiohttp_transport.py):
a body larger than aiohttp's buffer, read only once the buffer is full, must still arrive
whole, through a pause and the resumes after it, on a real loopback socket."""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from aiohttp.client_proto import ResponseHandler

from gw.adapters import aiohttp_transport
from gw.adapters.aiohttp_transport import AiohttpTransport, build_session
from gw.ports import AttemptTimeouts

CHUNK = bytes(range(256)) * 16  # 4 KiB
CHUNKS = 512  # 2 MiB, far above aiohttp's 128 KiB high-water mark


async def _serve_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.partition(b":")[2])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await reader.readexactly(length)
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
    writer.write(b"transfer-encoding: chunked\r\n\r\n")
    for _ in range(CHUNKS):
        writer.write(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    writer.close()


async def _read_whole_body_after_a_pause() -> tuple[bytes, bool]:
    """The body's bytes, and whether gw's protocol class was the one reading them."""
    server = await asyncio.start_server(_serve_chunked, "127.0.0.1", 0)
    origin = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    transport = AiohttpTransport(build_session())
    try:
        async with transport.post_streaming(
            f"{origin}/v1/chat/completions",
            headers={"content-type": "application/json"},
            body=b"{}",
            timeouts=AttemptTimeouts(connect=5.0, read=30.0),
            provider="fake",
        ) as reply:
            connection = reply._response.connection  # type: ignore[attr-defined]
            protocol = connection.protocol
            for _ in range(500):  # until aiohttp pauses reading: its buffer is full
                if protocol._reading_paused:
                    break
                await asyncio.sleep(0.01)
            assert protocol._reading_paused
            body = b"".join([chunk async for chunk in reply.chunks()])
    finally:
        await transport.close()
        server.close()
        await server.wait_closed()
    return body, isinstance(protocol, aiohttp_transport._ResumingOnlyWhenPaused)


def test_a_body_read_after_the_buffer_filled_arrives_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    resumes_when_paused: list[bool] = []
    protocol_class = aiohttp_transport._ResumingOnlyWhenPaused
    resume = protocol_class.resume_reading

    def spy(self: ResponseHandler, resume_parser: bool = True) -> None:
        resumes_when_paused.append(self._reading_paused)
        resume(self, resume_parser)  # type: ignore[arg-type]

    monkeypatch.setattr(protocol_class, "resume_reading", spy)
    body, gw_protocol = asyncio.run(_read_whole_body_after_a_pause())
    assert gw_protocol  # the connector builds gw's protocol (a private aiohttp attribute)
    assert len(body) == len(CHUNK) * CHUNKS
    assert hashlib.sha256(body).digest() == hashlib.sha256(CHUNK * CHUNKS).digest()
    assert True in resumes_when_paused  # the pause was lifted by a resume
    assert False in resumes_when_paused  # and reads without a pause skipped it
