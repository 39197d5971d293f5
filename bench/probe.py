"""Time from a server's start to its first answered chat request, in a tight bounded loop."""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from bench.processes import Spawned
from bench.upstream import CLIENT_KEY

_RETRY_S = 0.002
_TRY_TIMEOUT_S = 30.0  # a server may accept before its workers are ready: wait for them


def post(url: str, body: bytes, timeout: float, key: str = CLIENT_KEY) -> int:
    """POST ``body`` as JSON to ``url`` on a fresh connection; the response status."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None:
        raise ValueError(f"the benchmark only speaks plain http to loopback, not {url!r}")
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def first_answer(
    spawned: Spawned,
    locate: Callable[[], str | None],
    body: bytes,
    timeout: float,
    key: str = CLIENT_KEY,
) -> float:
    """Seconds from ``spawned``'s start until a POST to ``locate()`` with ``key`` answers 200.

    ``locate`` returns the chat URL, or None while the server has not said where it
    listens. Refused connections and non-200 answers are retried every 2 ms until
    ``timeout`` seconds after the start.
    """
    deadline = spawned.started + timeout
    last = "no answer"
    while (now := time.perf_counter()) < deadline:
        if spawned.exited():
            raise spawned.failure("exited before answering")
        url = locate()
        if url is not None:
            try:
                status = post(url, body, min(_TRY_TIMEOUT_S, max(deadline - now, 0.01)), key)
            except OSError as error:
                last = f"{type(error).__name__}: {error}"
            else:
                if status == 200:
                    return time.perf_counter() - spawned.started
                last = f"HTTP {status}"
        time.sleep(_RETRY_S)
    raise spawned.failure(f"no 200 answer within {timeout:.0f} s (last: {last})")
