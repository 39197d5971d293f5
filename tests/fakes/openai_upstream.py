"""A fake OpenAI Chat Completions upstream on loopback, with scripted faults.

It speaks the real wire format (JSON bodies, SSE `chat.completion.chunk` frames over
chunked transfer encoding, OpenAI-shaped error bodies and headers) from a background
thread with its own event loop, so sync tests and tests on any event loop can use it::

    with FakeOpenAI() as fake:
        fake.enqueue(Behavior(status=429, headers={"retry-after": "1"}), Behavior())
        client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test")
        ...
        assert fake.count == 2

Each chat or embeddings request pops the next scripted `Behavior`; when the script is
empty, `fake.default` applies. Embeddings (`POST /v1/embeddings`, or Azure's deployment
path) answer with `fake_embedding` vectors, as floats or base64 as the body asks. Run `python -m tests.fakes.openai_upstream --port 9100` to serve
one from the command line (the benchmark does this).
"""

from __future__ import annotations

import argparse
import array
import asyncio
import base64
import hashlib
import re
import signal
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any

import msgspec

from .http_server import Responder
from .scripted import (
    Faults,
    ReceivedRequest,
    ScriptedFake,
    send_whole,
    split_text,
    start_stream,
    word_count,
)

DEFAULT_TEXT = "Hello from fake upstream"
DEFAULT_MODEL = "gpt-4o-mini"
MODELS = ("gpt-4o-mini", "gpt-4o", "gpt-4.1-mini")

_encode = msgspec.json.encode
_DONE = b"data: [DONE]\n\n"
_MALFORMED_JSON = b'{"id": "x", "choices": ['
_MALFORMED_FRAME = b"data: {not json}\n\n"
_MODELS_BODY = _encode(
    {
        "object": "list",
        "data": [
            {"id": m, "object": "model", "created": 1715367049, "owned_by": "system"}
            for m in MODELS
        ],
    }
)
_JSON = ("content-type", "application/json")
_SSE = ("content-type", "text/event-stream; charset=utf-8")
# OpenAI's path, and Azure OpenAI's deployment path (same wire format).
_CHAT_PATH = re.compile(r"/v1/chat/completions|/openai/deployments/[^/]+/chat/completions")
_EMBEDDINGS_PATH = re.compile(r"/v1/embeddings|/openai/deployments/[^/]+/embeddings")
EMBEDDING_DIMENSIONS = 1536  # text-embedding-3-small's, when the body names none


@dataclass(frozen=True)
class Behavior(Faults):
    """How to answer one chat or embeddings request. The defaults are a normal, successful
    answer. A stream cut by `drop_after_chunks` has no finish chunk and no [DONE]."""

    status: int = 200
    error_body: dict[str, Any] | None = None  # status != 200; default: OpenAI's for status
    # Stream: after N content deltas, go silent for S seconds, then go on: (N, S).
    pause_after_chunks: tuple[int, float] | None = None
    text: str | None = None  # default: DEFAULT_TEXT
    chunks: int | None = None  # number of content deltas; default: one per word
    tool_call: tuple[str, str] | None = None  # (name, arguments JSON) instead of text
    refusal: bool = False  # the text as a refusal (content null), as structured outputs send
    usage: tuple[int, int] | None = None  # (prompt, completion); default: word counts
    omit_usage: bool = False
    finish_reason: str | None = None  # default: "stop", or "tool_calls"
    # Embeddings by words (a bag of words, hashed into the dimensions), so texts sharing
    # words are similar, as a real model's would be; default: a hash of the whole text.
    word_embeddings: bool = False


def default_error_body(status: int, model: str = DEFAULT_MODEL) -> dict[str, Any]:
    """The error body OpenAI sends for `status` (shape and wording as observed)."""
    kind, code = "invalid_request_error", None
    if status == 401:
        message = (
            "Incorrect API key provided: sk-fake***. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
        code = "invalid_api_key"
    elif status == 403:
        message, code = "Project does not have access to this model.", "model_not_found"
    elif status == 404:
        message = f"The model `{model}` does not exist or you do not have access to it."
        code = "model_not_found"
    elif status == 429:
        message = (
            f"Rate limit reached for {model} in organization org-fake on requests per min "
            "(RPM): Limit 3, Used 3, Requested 1. Please try again in 20s."
        )
        kind, code = "requests", "rate_limit_exceeded"
    elif status == 503:
        message, kind = (
            "The engine is currently overloaded, please try again later.",
            "server_error",
        )
    elif status >= 500:
        message = "The server had an error while processing your request. Sorry about that!"
        kind = "server_error"
    else:
        message = "Invalid request."
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _error(message: str, kind: str, code: str | None = None) -> bytes:
    return _encode({"error": {"message": message, "type": kind, "param": None, "code": code}})


def _prompt_words(body: dict[str, Any]) -> int:
    count = 0
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            count += word_count(content)
        elif isinstance(content, list):
            count += sum(word_count(p.get("text") or "") for p in content if isinstance(p, dict))
    return count


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def fake_embedding(item: str | list[int], dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """The vector the fake sends for one input: float32 values in [-1, 1) from a hash."""
    digest = hashlib.shake_256(repr(item).encode()).digest(2 * dimensions)
    values = [
        int.from_bytes(digest[i : i + 2], "little") / 32768 - 1 for i in range(0, len(digest), 2)
    ]
    return array.array("f", values).tolist()


def word_embedding(text: str, dimensions: int) -> list[float]:
    """A bag of words: each lowercased word adds 1 to the dimension its hash picks."""
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9']+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % dimensions] += 1.0
    return vector


def _embedding_items(value: Any) -> list[Any]:
    """`input` as a list of inputs (a string or a token array each)."""
    if isinstance(value, str) or (isinstance(value, list) and value and isinstance(value[0], int)):
        return [value]
    return list(value) if isinstance(value, list) else []


def _embedding_list(behavior: Behavior, body: dict[str, Any]) -> bytes:
    items = _embedding_items(body.get("input"))
    dimensions = body.get("dimensions") or EMBEDDING_DIMENSIONS
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, item in enumerate(items):
        vector: Any = (
            word_embedding(item, dimensions)
            if behavior.word_embeddings and isinstance(item, str)
            else fake_embedding(item, dimensions)
        )
        if as_base64:
            vector = base64.b64encode(array.array("f", vector).tobytes()).decode()
        data.append({"object": "embedding", "index": index, "embedding": vector})
    prompt = sum(word_count(item) if isinstance(item, str) else len(item) for item in items)
    if behavior.usage is not None:
        prompt = behavior.usage[0]
    payload: dict[str, Any] = {"object": "list", "data": data, "model": body.get("model")}
    if not behavior.omit_usage:
        payload["usage"] = {"prompt_tokens": prompt, "total_tokens": prompt}
    return _encode(payload)


class _Answer:
    """One successful chat answer, rendered either as a JSON body or as SSE frames."""

    def __init__(self, behavior: Behavior, body: dict[str, Any], serial: int) -> None:
        self.behavior = behavior
        self.model = str(body.get("model") or DEFAULT_MODEL)
        self.envelope = {
            "id": f"chatcmpl-fake-{serial}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
        }
        self.call_id = f"call_fake_{serial}"
        tool = behavior.tool_call
        if tool is None:
            self.text = DEFAULT_TEXT if behavior.text is None else behavior.text
            self.pieces = split_text(self.text, behavior.chunks)
            completion = word_count(self.text)
        else:
            chunks = behavior.chunks or max(1, -(-len(tool[1]) // 8))  # ~8 characters each
            self.pieces = split_text(tool[1], chunks)
            completion = word_count(f"{tool[0]} {tool[1]}")
        self.finish = behavior.finish_reason or ("stop" if tool is None else "tool_calls")
        prompt, completion = behavior.usage or (_prompt_words(body), completion)
        self.usage = None if behavior.omit_usage else _usage(prompt, completion)
        options = body.get("stream_options")
        self.include_usage = isinstance(options, dict) and options.get("include_usage") is True

    def completion_body(self) -> bytes:
        tool = self.behavior.tool_call
        refused = self.behavior.refusal
        text = None if tool or refused else self.text
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if tool is not None:
            function = {"name": tool[0], "arguments": tool[1]}
            message["tool_calls"] = [{"id": self.call_id, "type": "function", "function": function}]
        message |= {"refusal": self.text if refused else None, "annotations": []}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": self.finish}
        payload = {**self.envelope, "choices": [choice]}
        if self.usage is not None:
            payload["usage"] = self.usage
        payload |= {"service_tier": "default", "system_fingerprint": "fp_fake"}
        return _encode(payload)

    def frame(self, delta: dict[str, Any] | None, finish: str | None = None) -> bytes:
        """One `data:` frame: a choice with `delta`, or (delta None) the usage chunk."""
        chunk = {**self.envelope, "object": "chat.completion.chunk"}
        chunk |= {"service_tier": "default", "system_fingerprint": "fp_fake"}
        if delta is None:
            chunk |= {"choices": [], "usage": self.usage}
        else:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            chunk["choices"] = [choice]
            if self.include_usage:
                chunk["usage"] = None
        return b"data: " + _encode(chunk) + b"\n\n"

    def first_delta(self) -> dict[str, Any]:
        tool = self.behavior.tool_call
        if self.behavior.refusal:
            return {"role": "assistant", "content": None, "refusal": ""}
        if tool is None:
            return {"role": "assistant", "content": "", "refusal": None}
        function = {"name": tool[0], "arguments": ""}
        call = {"index": 0, "id": self.call_id, "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [call], "refusal": None}

    def delta(self, piece: str) -> dict[str, Any]:
        if self.behavior.refusal:
            return {"refusal": piece}
        if self.behavior.tool_call is None:
            return {"content": piece}
        return {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}


class FakeOpenAI(ScriptedFake[Behavior, str]):
    """A fake OpenAI server on its own thread and event loop. See the module docstring."""

    base_path = "/v1"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        record: bool = True,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        # `count`: chat and embeddings requests that used a behavior.
        super().__init__(host, port, default=Behavior(), parse_query=str, record=record, tls=tls)

    async def _answer(self, request: ReceivedRequest[str], responder: Responder) -> None:
        method, path, body = request.method, request.path, request.json
        if method == "POST" and _CHAT_PATH.fullmatch(path):
            await self._chat(body, responder)
        elif method == "POST" and _EMBEDDINGS_PATH.fullmatch(path):
            await self._embeddings(body, responder)
        elif method == "GET" and path == "/v1/models":
            await responder.send(200, [_JSON], _MODELS_BODY)
        else:
            message = f"Invalid URL ({method} {path})"
            await responder.send(404, [_JSON], _error(message, "invalid_request_error"))

    async def _chat(self, body: Any, responder: Responder) -> None:
        started = await self._start(body, responder)
        if started is None:
            return
        behavior, serial, headers = started
        if body.get("stream") is True:
            await self._stream(_Answer(behavior, body, serial), responder, [_SSE, *headers])
        else:
            await self._complete(_Answer(behavior, body, serial), responder, [_JSON, *headers])

    async def _embeddings(self, body: Any, responder: Responder) -> None:
        if isinstance(body, dict) and not body.get("input"):
            message = "'input' is a required property"
            await responder.send(400, [_JSON], _error(message, "invalid_request_error"))
            return
        started = await self._start(body, responder)
        if started is None:
            return
        behavior, _, headers = started
        payload = _MALFORMED_JSON if behavior.malformed else _embedding_list(behavior, body)
        await send_whole(behavior, payload, responder, [_JSON, *headers])

    async def _start(
        self, body: Any, responder: Responder
    ) -> tuple[Behavior, int, list[tuple[str, str]]] | None:
        """What every answer shares: the body check, the next behavior and its faults up to
        a 200 head. None when the request was answered (or dropped) already."""
        if not isinstance(body, dict):
            message = "We could not parse the JSON body of your request."
            await responder.send(400, [_JSON], _error(message, "invalid_request_error"))
            return None
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
            model = str(body.get("model") or DEFAULT_MODEL)
            error_body = behavior.error_body or default_error_body(behavior.status, model)
            await responder.send(behavior.status, [_JSON, *headers], _encode(error_body))
            return None
        return behavior, serial, headers

    @staticmethod
    async def _complete(
        answer: _Answer, responder: Responder, headers: list[tuple[str, str]]
    ) -> None:
        behavior = answer.behavior
        payload = _MALFORMED_JSON if behavior.malformed else answer.completion_body()
        await send_whole(behavior, payload, responder, headers)

    @staticmethod
    async def _stream(
        answer: _Answer, responder: Responder, headers: list[tuple[str, str]]
    ) -> None:
        behavior = answer.behavior
        delay, drop_after = behavior.delay_between_chunks, behavior.drop_after_chunks
        await start_stream(behavior, responder, headers)
        await responder.write(answer.frame(answer.first_delta()))
        if behavior.malformed:
            await responder.write(_MALFORMED_FRAME)
        else:
            for sent, piece in enumerate(answer.pieces):
                if drop_after is not None and sent >= drop_after:
                    break
                if behavior.pause_after_chunks and sent == behavior.pause_after_chunks[0]:
                    await asyncio.sleep(behavior.pause_after_chunks[1])
                if delay:
                    await asyncio.sleep(delay)
                await responder.write(answer.frame(answer.delta(piece)))
            if drop_after is not None:
                responder.abort()
                return
            if delay:
                await asyncio.sleep(delay)
            await responder.write(answer.frame({}, answer.finish))
            if answer.include_usage and answer.usage is not None:
                await responder.write(answer.frame(None))
        await responder.write(_DONE)
        await responder.end()


def main(argv: list[str] | None = None) -> None:
    """Serve a fake upstream in the foreground until interrupted (for the benchmark)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--text", default=None, help="reply text")
    parser.add_argument("--chunks", type=int, default=None, help="content deltas per stream")
    parser.add_argument("--delay-between-chunks", type=float, default=0.0)
    args = parser.parse_args(argv)
    fake = FakeOpenAI(args.host, args.port, record=False)
    fake.default = Behavior(
        text=args.text, chunks=args.chunks, delay_between_chunks=args.delay_between_chunks
    )
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    with fake:
        print(fake.base_url, flush=True)  # the caller reads the bound URL from stdout
        stopped.wait()


if __name__ == "__main__":
    main()
