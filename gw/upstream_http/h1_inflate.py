"""Decoding a gzip or deflate answer body as it arrives (gw's own HTTP/1.1 client).

Every problem raises ``zlib.error``, which the connection reports as a body "cut short or
undecodable": bytes that are not the format, a body that ends mid-stream, or more decoded
bytes than ``MAX_DECODED_BYTES`` (a small answer must not inflate into gigabytes).
"""

from __future__ import annotations

import zlib

MAX_DECODED_BYTES = 64 * 1024 * 1024
_GZIP = 16 + zlib.MAX_WBITS


class Inflater:
    def __init__(self, encoding: str) -> None:
        self._gzip = encoding != "deflate"
        # HTTP "deflate" is zlib-wrapped by the standard and raw from some servers: the first
        # two bytes tell which, so the decoder is built once they have arrived.
        self._inner = zlib.decompressobj(_GZIP) if self._gzip else None
        self._pending = b""
        self._decoded = 0
        self._started = False

    def decompress(self, data: bytes) -> bytes:
        self._started = self._started or bool(data)
        inner = self._inner
        if inner is None:
            data = self._pending + data
            if len(data) < 2:
                self._pending = data
                return b""
            self._pending = b""
            wrapped = data[0] & 0x0F == 8 and int.from_bytes(data[:2], "big") % 31 == 0
            inner = self._inner = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        pieces = []
        while data:
            # One byte over the allowance at most: more means the body is too large.
            piece = inner.decompress(data, MAX_DECODED_BYTES - self._decoded + 1)
            self._decoded += len(piece)
            if self._decoded > MAX_DECODED_BYTES:
                raise zlib.error(f"decoded body over {MAX_DECODED_BYTES} bytes")
            pieces.append(piece)
            data = b""
            if inner.eof and inner.unused_data and self._gzip:  # gzip allows several members
                data = inner.unused_data
                inner = self._inner = zlib.decompressobj(_GZIP)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def flush(self) -> bytes:
        """What is left, once the body ended; raises when the compressed data did not end."""
        if not self._started:
            return b""  # no body at all (a 204, or an empty error answer): nothing to decode
        inner = self._inner
        if inner is None:
            raise zlib.error("the compressed body ended after one byte")
        tail = inner.flush()
        if not inner.eof:
            raise zlib.error("the compressed body was cut short")
        return tail
