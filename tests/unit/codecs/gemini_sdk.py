"""google-genai on an in-memory transport, so codec tests judge the wire by Google's SDK:
the bodies it really sends (``sent``), and its own parsing of what gw answers (``answer``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from google import genai
from google.genai import types

TEXT_ANSWER = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
    ]
}


class SDK:
    """A ``genai.Client`` whose requests are kept and answered by ``respond``."""

    def __init__(self, respond: Callable[[httpx.Request], httpx.Response] | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self._respond = respond or (lambda _: httpx.Response(200, json=TEXT_ANSWER))

        def handle(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            return self._respond(request)

        http = httpx.Client(transport=httpx.MockTransport(handle))
        options = types.HttpOptions(base_url="http://gw.test", httpx_client=http)
        self.client = genai.Client(api_key="k", http_options=options)

    @property
    def body(self) -> bytes:
        """The body of the last request sent."""
        return self.requests[-1].content

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def sent(contents: Any, config: types.GenerateContentConfig | None = None) -> bytes:
    """The ``generateContent`` body google-genai sends for ``contents`` and ``config``."""
    sdk = SDK()
    sdk.client.models.generate_content(model="m", contents=contents, config=config)
    return sdk.body


def answer(body: bytes, status: int = 200) -> SDK:
    """An SDK whose every call gets ``body`` back (JSON or SSE) with ``status``."""
    content_type = "text/event-stream" if body.startswith(b"data:") else "application/json"
    return SDK(
        lambda _: httpx.Response(status, content=body, headers={"content-type": content_type})
    )


NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)
