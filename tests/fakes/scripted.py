"""What every fake upstream shares, whatever wire format it speaks.

A fake is a `ScriptedFake` subclass: this base holds the script of behaviors, the requests
received and the server thread; the subclass routes paths and renders a behavior in its
provider's format. The helpers below apply the `Faults` every provider's ``Behavior``
shares (a delay or drop before the head, a delay or drop in a whole body, a delay before
the first stream chunk) and cut answer text into stream deltas.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

import msgspec

from .http_server import HttpRequest, Responder, ServerThread

_WORD = re.compile(r"\s*\S+")
HOLD_MAX_S = 60.0  # a held answer goes out after this, should a test forget to release it


@dataclass(frozen=True, kw_only=True)
class Faults:
    """What every fake's ``Behavior`` shares: extra headers and the faults of timing and
    transport, the same for every provider. Each fake's ``Behavior`` adds the rest."""

    headers: dict[str, str] = field(default_factory=dict)  # extra response headers
    delay_before_headers: float = 0.0
    drop_before_headers: bool = False  # close the connection instead of answering
    delay_before_first_chunk: float = 0.0  # non-stream: between the head and the body
    delay_between_chunks: float = 0.0
    # Stream: abort the connection after N content deltas (as the fake counts them).
    # Non-stream: abort after sending half of the body.
    drop_after_chunks: int | None = None
    malformed: bool = False  # a body, or a stream frame, that is not JSON
    # Hold the answer (before its head) until the test sets this event: a call kept open
    # for as long as the test needs, without a timed delay. Bounded by HOLD_MAX_S.
    hold: threading.Event | None = None


B = TypeVar("B", bound=Faults)  # the fake's Behavior
Q = TypeVar("Q")  # how the fake records a query string: as sent, or parsed


@dataclass(frozen=True)
class ReceivedRequest(Generic[Q]):
    """One request as the fake read it (recorded before it is answered)."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    json: Any  # the parsed body; None when empty or not JSON
    body: bytes
    query: Q  # what follows "?" in the target, as the fake's parse_query returns it


class ScriptedFake(ABC, Generic[B, Q]):
    """A fake upstream on its own thread and event loop, answering from a script.

    Each request that reaches a behavior (see `_next_behavior`) pops the next enqueued
    one; when the script is empty, `default` applies.
    """

    base_path = ""  # what `base_url` adds to the origin

    def __init__(
        self,
        host: str,
        port: int,
        *,
        default: B,
        parse_query: Callable[[str], Q],
        record: bool = True,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        self.tls = tls  # a server context: the fake speaks https
        self.port = port  # 0 binds a free port; start() sets the bound one
        self.default = default
        self.count = 0  # requests that used a behavior, faulted ones included
        # Answers cut short because the client closed the connection (a write failed):
        # a fake that is sleeping notices at its next write.
        self.disconnects = 0
        self._parse_query = parse_query
        self._record = record  # False keeps memory flat under a long benchmark
        self._lock = threading.Lock()
        self._requests: list[ReceivedRequest[Q]] = []
        self._script: deque[B] = deque()
        self._serial = 0
        self._server: ServerThread | None = None

    @property
    def base_url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{self.host}:{self.port}{self.base_path}"

    @property
    def requests(self) -> list[ReceivedRequest[Q]]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """How many enqueued behaviors have not been used yet."""
        with self._lock:
            return len(self._script)

    def enqueue(self, *behaviors: B) -> None:
        with self._lock:
            self._script.extend(behaviors)

    def clear(self) -> None:
        """Forget recorded requests, reset `count` and `disconnects`, and drop unused
        enqueued behaviors."""
        with self._lock:
            self._requests.clear()
            self._script.clear()
            self.count = 0
            self.disconnects = 0

    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError(f"{type(self).__name__} is already started")
        name = type(self).__name__
        server = ServerThread(self._handle, self.host, self.port, name=name, tls=self.tls)
        self.port = server.start()
        self._server = server
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @abstractmethod
    async def _answer(self, request: ReceivedRequest[Q], responder: Responder) -> None:
        """Route `request` and answer it in the fake's wire format."""

    async def _handle(self, http: HttpRequest, responder: Responder) -> None:
        path, _, query = http.target.partition("?")
        try:
            body = msgspec.json.decode(http.body) if http.body else None
        except msgspec.DecodeError:
            body = None
        request = ReceivedRequest(
            http.method, path, http.headers, body, http.body, self._parse_query(query)
        )
        if self._record:
            with self._lock:
                self._requests.append(request)
        try:
            await self._answer(request, responder)
        except ConnectionError:
            with self._lock:
                self.disconnects += 1
            raise  # the server cuts the connection

    async def _next_behavior(self, responder: Responder) -> tuple[B, int] | None:
        """Take the next behavior and a serial number for its answer, then apply its
        faults before the head. None when it dropped the connection."""
        with self._lock:
            behavior = self._script.popleft() if self._script else self.default
            self.count += 1
            self._serial += 1
            serial = self._serial
        if behavior.delay_before_headers:
            await asyncio.sleep(behavior.delay_before_headers)
        if behavior.hold is not None:
            await asyncio.to_thread(behavior.hold.wait, HOLD_MAX_S)
        if behavior.drop_before_headers:
            responder.abort()
            return None
        return behavior, serial


async def send_whole(
    behavior: Faults, payload: bytes, responder: Responder, headers: list[tuple[str, str]]
) -> None:
    """A whole (non-stream) 200 body, with the behavior's delay or mid-body drop."""
    if not behavior.delay_before_first_chunk and behavior.drop_after_chunks is None:
        await responder.send(200, headers, payload)
        return
    await responder.start(200, headers, len(payload))
    if behavior.delay_before_first_chunk:
        await asyncio.sleep(behavior.delay_before_first_chunk)
    if behavior.drop_after_chunks is not None:
        await responder.write(payload[: len(payload) // 2])
        responder.abort()
        return
    await responder.write(payload)


async def start_stream(
    behavior: Faults, responder: Responder, headers: list[tuple[str, str]]
) -> None:
    """Send a chunked 200 head, then wait the behavior's delay before the first chunk."""
    await responder.start(200, headers, None)
    if behavior.delay_before_first_chunk:
        await asyncio.sleep(behavior.delay_before_first_chunk)


def split_text(text: str, chunks: int | None) -> list[str]:
    """Deltas for `text`: one per word (with its leading space), or exactly `chunks` pieces,
    cut at word boundaries when there are enough words, else at even character offsets.
    """
    words: list[str] = _WORD.findall(text)
    tail = text[sum(map(len, words)) :]
    if tail:
        words.append(tail)
    if chunks is None:
        return words
    n = max(1, chunks)
    if n <= len(words):
        return ["".join(words[i * len(words) // n : (i + 1) * len(words) // n]) for i in range(n)]
    return [text[i * len(text) // n : (i + 1) * len(text) // n] for i in range(n)]


def word_count(text: str) -> int:
    """The fakes' stand-in for a token count."""
    return len(text.split())
