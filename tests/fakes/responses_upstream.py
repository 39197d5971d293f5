"""A fake OpenAI Responses upstream on loopback, with scripted faults.

It speaks the real wire format (``POST /v1/responses``: a JSON ``response`` object, or with
``stream: true`` an SSE stream of named, numbered events from ``response.created`` to
``response.completed``; OpenAI-shaped error bodies and headers) from a background thread
with its own event loop::

    with FakeResponses() as fake:
        fake.enqueue(Behavior(status=429, headers={"retry-after": "1"}), Behavior())
        client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test")
        client.responses.create(model="gpt-5-mini", input="hi")
        assert fake.count == 2

The answer's items and events are built in responses_answer.py. Like OpenAI, a request is
refused with a 400 before any script is used when its body has a parameter the Responses
API does not know (``messages``, ``stream_options`` on a non-stream call, ...), no
``model``, or an assistant message with ``input_text`` parts. Azure's paths
(``/openai/v1/responses``, ``/openai/responses?api-version=...``) are served too.
Embeddings (``/v1/embeddings``) answer as the fake OpenAI upstream does.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import msgspec
from openai.types.responses.response_create_params import ResponseCreateParamsBase

from . import openai_upstream
from .http_server import Responder
from .openai_upstream import _embedding_list, default_error_body
from .responses_answer import DEFAULT_MODEL, DEFAULT_TEXT, DELTA_EVENTS, Answer, Behavior
from .scripted import ReceivedRequest, ScriptedFake, send_whole, start_stream

__all__ = ["DEFAULT_MODEL", "DEFAULT_TEXT", "Behavior", "FakeResponses"]

_encode = msgspec.json.encode
_JSON = ("content-type", "application/json")
_SSE = ("content-type", "text/event-stream; charset=utf-8")
_MALFORMED_JSON = b'{"id": "resp_x", "object": "response", "output": ['
_MALFORMED_FRAME = b"event: response.output_text.delta\ndata: {not json}\n\n"
_RESPONSES_PATH = re.compile(r"(/openai)?/v1/responses|/openai/responses")
_EMBEDDINGS_PATH = re.compile(r"(/openai)?/v1/embeddings")
# Every parameter POST /v1/responses takes (the SDK's own list), and stream; and
# client_metadata, which the SDK does not list but OpenAI's own Codex CLI sends on every
# request to api.openai.com (so the API takes it).
PARAMETERS = frozenset(ResponseCreateParamsBase.__annotations__) | {"stream", "client_metadata"}


def _error(message: str, param: str | None = None, code: str | None = None) -> bytes:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return _encode({"error": error})


def request_problem(body: Any) -> bytes | None:
    """The 400 body OpenAI would answer ``body`` with, or None when it is acceptable."""
    if not isinstance(body, dict):
        return _error("We could not parse the JSON body of your request.")
    for key in body:
        if key not in PARAMETERS or (key == "stream_options" and body.get("stream") is not True):
            return _error(f"Unknown parameter: '{key}'.", key, "unknown_parameter")
    if not body.get("model"):
        return _error("Missing required parameter: 'model'.", "model", "missing_required_parameter")
    items = body.get("input")
    for index, item in enumerate(items if isinstance(items, list) else ()):
        if not isinstance(item, dict) or item.get("role") != "assistant":
            continue
        for number, part in enumerate(item.get("content") or ()):
            if isinstance(part, dict) and part.get("type") not in ("output_text", "refusal"):
                param = f"input[{index}].content[{number}]"
                return _error(
                    f"Invalid value: '{part.get('type')}'. Supported values are: "
                    "'output_text' and 'refusal'.",
                    param,
                    "invalid_value",
                )
    return None


def frame(event: dict[str, Any]) -> bytes:
    """One SSE frame, named as OpenAI names them."""
    return f"event: {event['type']}\n".encode() + b"data: " + _encode(event) + b"\n\n"


class FakeResponses(ScriptedFake[Behavior, str]):
    """A fake Responses server on its own thread and event loop. See the module docstring."""

    base_path = "/v1"

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, record: bool = True) -> None:
        super().__init__(host, port, default=Behavior(), parse_query=str, record=record)

    @property
    def responses_requests(self) -> list[ReceivedRequest[str]]:
        """The requests to a responses path, oldest first."""
        return [r for r in self.requests if _RESPONSES_PATH.fullmatch(r.path)]

    async def _answer(self, request: ReceivedRequest[str], responder: Responder) -> None:
        method, path, body = request.method, request.path, request.json
        if method == "POST" and _RESPONSES_PATH.fullmatch(path):
            await self._responses(body, responder)
        elif method == "POST" and _EMBEDDINGS_PATH.fullmatch(path):
            started = await self._start(body, responder)
            if started is not None:
                behavior, _, headers = started
                as_openai = openai_upstream.Behavior(usage=behavior.usage)
                payload = _embedding_list(as_openai, body)
                await send_whole(behavior, payload, responder, [_JSON, *headers])
        else:
            await responder.send(404, [_JSON], _error(f"Invalid URL ({method} {path})"))

    async def _responses(self, body: Any, responder: Responder) -> None:
        problem = request_problem(body)
        if problem is not None:
            await responder.send(400, [_JSON], problem)
            return
        started = await self._start(body, responder)
        if started is None:
            return
        behavior, serial, headers = started
        answer = Answer(behavior, body, serial)
        if body.get("stream") is True:
            await self._stream(answer, responder, [_SSE, *headers])
        else:
            payload = _MALFORMED_JSON if behavior.malformed else _encode(answer.whole())
            await send_whole(behavior, payload, responder, [_JSON, *headers])

    async def _start(
        self, body: Any, responder: Responder
    ) -> tuple[Behavior, int, list[tuple[str, str]]] | None:
        """The next behavior and its faults up to a 200 head; None when it was answered
        (an error status) or dropped already."""
        taken = await self._next_behavior(responder)
        if taken is None:
            return None
        behavior, serial = taken
        headers = [
            ("x-request-id", f"req_{serial:032x}"),
            ("openai-version", "2020-10-01"),
            ("openai-processing-ms", "1"),
            *behavior.headers.items(),
        ]
        if behavior.status != 200:
            model = str(body.get("model") or DEFAULT_MODEL) if isinstance(body, dict) else ""
            error_body = behavior.error_body or default_error_body(behavior.status, model)
            await responder.send(behavior.status, [_JSON, *headers], _encode(error_body))
            return None
        return behavior, serial, headers

    @staticmethod
    async def _stream(answer: Answer, responder: Responder, headers: list[tuple[str, str]]) -> None:
        behavior = answer.behavior
        await start_stream(behavior, responder, headers)
        for event in answer.events():
            if event["type"] in DELTA_EVENTS:
                if (
                    behavior.drop_after_chunks is not None
                    and answer.deltas >= behavior.drop_after_chunks
                ):
                    responder.abort()
                    return
                if behavior.error_after_chunks is not None and (
                    answer.deltas >= behavior.error_after_chunks
                ):
                    await responder.write(frame(answer.error_event(event["sequence_number"])))
                    await responder.end()
                    return
                if behavior.malformed:
                    await responder.write(_MALFORMED_FRAME)
                    await responder.end()
                    return
                if behavior.delay_between_chunks:
                    await asyncio.sleep(behavior.delay_between_chunks)
                answer.deltas += 1
            await responder.write(frame(event))
        await responder.end()
