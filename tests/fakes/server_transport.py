"""The transport a server protocol writes to, without a socket: what it wrote and whether
it closed, for tests that drive gw's uvicorn protocol by hand
(gw/server/runtime/protocol.py)."""

from __future__ import annotations

from typing import Any


class FakeTransport:
    def __init__(self) -> None:
        self.written = b""
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8787)}.get(name)

    def write(self, data: bytes) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass
