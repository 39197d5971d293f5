"""A fake Gemini API (Google AI Studio, v1beta) on loopback, with scripted faults.

It speaks the real wire format: ``POST /v1beta/models/{model}:generateContent`` answers a
``GenerateContentResponse``; ``:batchEmbedContents`` answers one vector per request (at
most 100); ``:streamGenerateContent?alt=sse`` answers SSE frames
``data: {...}\\r\\n\\r\\n`` (one response chunk each, no end marker) over chunked transfer
encoding, and without ``alt=sse`` a JSON array. Errors have Google's shape
(``{"error": {"code", "message", "status", "details"}}``). It runs on its own thread and
event loop, like ``FakeOpenAI``::

    with FakeGemini() as fake:
        fake.enqueue(Behavior(status=429), Behavior(tool_calls=(("get_weather", '{"city": "Oslo"}'),)))
        ...  # base URL: fake.base_url; key: the x-goog-api-key header (or ?key=)
        assert fake.count == 2

Each generate request pops the next scripted ``Behavior``; when the script is empty,
``fake.default`` applies. A request without any API key gets Google's 403; with
``FakeGemini(api_key=...)`` a different key gets Google's 400 ``API_KEY_INVALID``.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import urllib.parse
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

DEFAULT_TEXT = "Hello from fake Gemini"
MAX_EMBED_BATCH = 100  # batchEmbedContents refuses more requests in one call
DEFAULT_MODEL = "gemini-2.5-flash"
MODELS = ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-flash-preview")

_encode = msgspec.json.encode
_GENERATE = re.compile(
    r"^/v1beta/(models|tunedModels)/([^/:]+)"
    r":(generateContent|streamGenerateContent|batchEmbedContents)$"
)
_JSON = ("content-type", "application/json; charset=UTF-8")
_SSE = ("content-type", "text/event-stream")
_MALFORMED_JSON = b'{"candidates": [{"content": '
_MALFORMED_FRAME = b"data: {not json}\r\n\r\n"
_SAFETY_RATINGS = [
    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"},
]


@dataclass(frozen=True)
class Behavior(Faults):
    """How to answer one generate request. The defaults are a normal, successful answer.
    A stream cut by `drop_after_chunks` has no finish reason."""

    status: int = 200
    error_body: dict[str, Any] | None = None  # status != 200; default: Google's for status
    pause_after_chunks: tuple[int, float] | None = None  # stream: after N chunks, silent S s
    text: str | None = None  # default: DEFAULT_TEXT
    chunks: int | None = None  # text chunks in a stream; default: one per word
    tool_calls: tuple[tuple[str, str], ...] = ()  # (name, arguments JSON object) each
    call_ids: bool = False  # give function calls an id (newer models do)
    thought: str | None = None  # a thought summary part first (includeThoughts)
    # On the first function call part, else on the last text part (as Gemini 3 does).
    thought_signature: str | None = None
    usage: tuple[int, int] | None = None  # (prompt, candidates); default: word counts
    thoughts_tokens: int = 0
    cached_tokens: int = 0
    omit_usage: bool = False
    finish_reason: str | None = None  # default: STOP
    block_reason: str | None = None  # promptFeedback.blockReason, and no candidate
    # Stream: after N text chunks a chunk with finishReason SAFETY and no content ends it.
    # Non-stream: the answer holds the first N pieces and finishReason SAFETY.
    safety_after_chunks: int | None = None
    # Stream: after N chunks an {"error": ...} object (this body) ends the stream.
    error_in_stream: tuple[int, dict[str, Any]] | None = None


def google_error(code: int, status: str, message: str, *details: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return {"error": error}


_UNKNOWN_FIELD = 'Invalid JSON payload received. Unknown name "foo": Cannot find field.'
_QUOTA = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
_RATE_LIMITS = "https://ai.google.dev/gemini-api/docs/rate-limits"
# status -> (google.rpc code, message); {model} is filled in.
_ERRORS: dict[int, tuple[str, str]] = {
    400: ("INVALID_ARGUMENT", _UNKNOWN_FIELD),
    401: (
        "UNAUTHENTICATED",
        "Request had invalid authentication credentials. Expected OAuth 2 access token, "
        "login cookie or other valid authentication credential.",
    ),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: (
        "NOT_FOUND",
        "models/{model} is not found for API version v1beta, or is not supported for "
        "generateContent. Call ListModels to see the list of available models and their "
        "supported methods.",
    ),
    429: (
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details. For "
        f"more information on this error, head to: {_RATE_LIMITS}.",
    ),
    500: (
        "INTERNAL",
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
    ),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
}


def _details(status: int, model: str) -> list[dict[str, Any]]:
    if status == 400:
        violation = {"description": _UNKNOWN_FIELD}
        return [
            {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}
        ]
    if status != 429:
        return []
    quota = {
        "quotaMetric": _QUOTA,
        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
        "quotaDimensions": {"location": "global", "model": model},
        "quotaValue": "10",
    }
    link = {"description": "Learn more about Gemini API quotas", "url": _RATE_LIMITS}
    return [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [quota]},
        {"@type": "type.googleapis.com/google.rpc.Help", "links": [link]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"},
    ]


def default_error_body(status: int, model: str = DEFAULT_MODEL) -> dict[str, Any]:
    """The error body Gemini sends for ``status`` (shape and wording as observed)."""
    fallback = (
        _ERRORS[500] if status >= 500 else ("FAILED_PRECONDITION", "Precondition check failed.")
    )
    google_status, message = _ERRORS.get(status, fallback)
    return google_error(
        status, google_status, message.format(model=model), *_details(status, model)
    )


def invalid_key_body() -> dict[str, Any]:
    message = "API key not valid. Please pass a valid API key."
    return google_error(
        400,
        "INVALID_ARGUMENT",
        message,
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        },
        {
            "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
            "locale": "en-US",
            "message": message,
        },
    )


def _body_problem(body: Any, method: str) -> str | None:
    if not isinstance(body, dict):
        return "Invalid JSON payload received. Unexpected token."
    return None if method == "batchEmbedContents" else request_problem(body)


def request_problem(body: dict[str, Any]) -> str | None:
    """Gemini's 400 for a generateContent body it refuses, as it words it; None when fine:
    a part with no data (empty text), a turn without parts, and ``Schema`` objects that
    break its rules (an OBJECT without properties, properties or enum on the wrong type)."""
    where = "GenerateContentRequest"
    for i, content in enumerate(body.get("contents") or ()):
        parts = content.get("parts") or []
        if not parts:
            return f"* {where}.contents[{i}].parts: contents.parts must not be empty."
        for j, part in enumerate(parts):
            if part.get("text") == "" and len(part) == 1:
                return (
                    f"* {where}.contents[{i}].parts[{j}].data: required oneof field 'data' "
                    "must have one initialized field"
                )
    for i, tool in enumerate(body.get("tools") or ()):
        for j, declaration in enumerate(tool.get("functionDeclarations") or ()):
            if "parameters" in declaration:
                path = f"{where}.tools[{i}].function_declarations[{j}].parameters"
                problem = _schema_problem(declaration["parameters"], path)
                if problem is not None:
                    return problem
    schema = (body.get("generationConfig") or {}).get("responseSchema")
    if schema is not None:
        return _schema_problem(schema, f"{where}.generation_config.response_schema")
    return None


def _schema_problem(schema: dict[str, Any], path: str) -> str | None:
    kind = str(schema.get("type", "")).upper()
    properties = schema.get("properties")
    if kind == "OBJECT" and not properties:
        return f"* {path}.properties: should be non-empty for OBJECT type"
    if properties is not None and kind != "OBJECT":
        return f"* {path}.properties: only allowed for OBJECT type"
    if "enum" in schema and kind != "STRING":
        return f"* {path}.enum: only allowed for STRING type"
    children = [(f"{path}.properties[{name}]", sub) for name, sub in (properties or {}).items()]
    if isinstance(schema.get("items"), dict):
        children.append((f"{path}.items", schema["items"]))
    children += [(f"{path}.any_of[{n}]", sub) for n, sub in enumerate(schema.get("anyOf") or ())]
    for child_path, child in children:
        problem = _schema_problem(child, child_path)
        if problem is not None:
            return problem
    return None


def _prompt_words(body: dict[str, Any]) -> int:
    contents = [*(body.get("contents") or ()), body.get("systemInstruction") or {}]
    return sum(
        word_count(part.get("text") or "")
        for content in contents
        if isinstance(content, dict)
        for part in content.get("parts") or ()
        if isinstance(part, dict)
    )


class _Answer:
    """One successful answer, rendered as a whole response or as stream chunks."""

    def __init__(self, behavior: Behavior, body: dict[str, Any], model: str, serial: int) -> None:
        self.behavior = behavior
        self.model = model
        self.response_id = f"fakeGeminiResp{serial:06d}"
        self.text = DEFAULT_TEXT if behavior.text is None else behavior.text
        self.calls = [
            self._call(name, arguments, i)
            for i, (name, arguments) in enumerate(behavior.tool_calls)
        ]
        self.pieces = [] if self.calls else split_text(self.text, behavior.chunks)
        if behavior.safety_after_chunks is not None:
            self.pieces = self.pieces[: behavior.safety_after_chunks]
        said = (
            " ".join(f"{n} {a}" for n, a in behavior.tool_calls)
            if self.calls
            else "".join(self.pieces)
        )
        self.prompt, self.candidates = behavior.usage or (_prompt_words(body), word_count(said))
        self.finish = behavior.finish_reason or (
            "SAFETY" if behavior.safety_after_chunks is not None else "STOP"
        )

    def _call(self, name: str, arguments: str, index: int) -> dict[str, Any]:
        call: dict[str, Any] = {"name": name, "args": msgspec.json.decode(arguments)}
        if self.behavior.call_ids:
            call["id"] = f"fc-{index}-{name}"
        part: dict[str, Any] = {"functionCall": call}
        if index == 0 and self.behavior.thought_signature:
            part["thoughtSignature"] = self.behavior.thought_signature
        return part

    def usage(self, candidates: int | None = None, *, final: bool = True) -> dict[str, Any] | None:
        behavior = self.behavior
        if behavior.omit_usage:
            return None
        produced = self.candidates if candidates is None else candidates
        thoughts = behavior.thoughts_tokens if final else 0
        usage: dict[str, Any] = {"promptTokenCount": self.prompt}
        if produced:
            usage["candidatesTokenCount"] = produced
        usage["totalTokenCount"] = self.prompt + produced + thoughts
        if behavior.cached_tokens:
            usage["cachedContentTokenCount"] = behavior.cached_tokens
        usage["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": self.prompt}]
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
        return usage

    def envelope(self, candidate: dict[str, Any] | None, usage: dict[str, Any] | None) -> bytes:
        payload: dict[str, Any] = {}
        if candidate is not None:
            payload["candidates"] = [candidate]
        if self.behavior.block_reason is not None:
            payload["promptFeedback"] = {
                "blockReason": self.behavior.block_reason,
                "safetyRatings": _SAFETY_RATINGS,
            }
        if usage is not None:
            payload["usageMetadata"] = usage
        payload |= {"modelVersion": self.model, "responseId": self.response_id}
        return _encode(payload)

    def candidate(self, parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
        candidate: dict[str, Any] = {}
        if parts:
            candidate["content"] = {"parts": parts, "role": "model"}
        if finish is not None:
            candidate["finishReason"] = finish
            if finish in ("SAFETY", "PROHIBITED_CONTENT"):
                candidate["safetyRatings"] = _SAFETY_RATINGS
        candidate["index"] = 0
        return candidate

    def thought_parts(self) -> list[dict[str, Any]]:
        thought = self.behavior.thought
        return [] if thought is None else [{"text": thought, "thought": True}]

    def text_part(self, text: str, *, last: bool) -> dict[str, Any]:
        part: dict[str, Any] = {"text": text}
        if last and self.behavior.thought_signature and not self.calls:
            part["thoughtSignature"] = self.behavior.thought_signature
        return part

    def whole(self) -> bytes:
        """The generateContent body."""
        if self.behavior.block_reason is not None:
            return self.envelope(None, self.usage(0))
        parts = self.thought_parts()
        if self.calls:
            parts += self.calls
        elif self.pieces:
            parts.append(self.text_part("".join(self.pieces), last=True))
        return self.envelope(self.candidate(parts, self.finish), self.usage())

    def frames(self) -> list[bytes]:
        """The stream chunks, in order, each a ``data:`` frame; the last one finishes."""
        if self.behavior.block_reason is not None:
            return [self.frame(self.envelope(None, self.usage(0)))]
        frames: list[bytes] = []
        thought = self.thought_parts()
        if thought:
            frames.append(
                self.frame(self.envelope(self.candidate(thought, None), self.usage(0, final=False)))
            )
        if self.calls:
            frames.append(
                self.frame(self.envelope(self.candidate(self.calls, self.finish), self.usage()))
            )
            return frames
        produced = ""
        safety = self.behavior.safety_after_chunks is not None
        for i, piece in enumerate(self.pieces):
            produced += piece
            last = i == len(self.pieces) - 1 and not safety
            finish = self.finish if last else None
            usage = self.usage() if last else self.usage(word_count(produced), final=False)
            frames.append(
                self.frame(
                    self.envelope(self.candidate([self.text_part(piece, last=last)], finish), usage)
                )
            )
        if safety or not self.pieces:
            frames.append(self.frame(self.envelope(self.candidate([], self.finish), self.usage())))
        return frames

    @staticmethod
    def frame(payload: bytes) -> bytes:
        return b"data: " + payload + b"\r\n\r\n"


class FakeGemini(ScriptedFake[Behavior, dict[str, str]]):
    """A fake Gemini API on its own thread and event loop. See the module docstring."""

    base_path = ""  # what gw's base_url (and Google's SDK) name: the host, no /v1beta

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = None
    ) -> None:
        super().__init__(host, port, default=Behavior(), parse_query=_parse_query)
        self.api_key = api_key  # when set, any other key is refused

    async def _answer(self, request: ReceivedRequest[dict[str, str]], responder: Responder) -> None:
        match = _GENERATE.match(request.path)
        if request.method == "POST" and match is not None:
            model = urllib.parse.unquote(match.group(2))
            method = match.group(3)
            await self._generate(request, model=model, method=method, responder=responder)
        elif request.method == "GET" and request.path == "/v1beta/models":
            models = [
                {"name": f"models/{m}", "supportedGenerationMethods": ["generateContent"]}
                for m in MODELS
            ]
            await responder.send(200, [_JSON], _encode({"models": models}))
        else:
            await responder.send(
                404, [_JSON], _encode(google_error(404, "NOT_FOUND", "Method not found."))
            )

    async def _generate(
        self,
        request: ReceivedRequest[dict[str, str]],
        *,
        model: str,
        method: str,
        responder: Responder,
    ) -> None:
        body, query = request.json, request.query
        key = request.headers.get("x-goog-api-key") or query.get("key")
        if not key:
            message = (
                "Method doesn't allow unregistered callers (callers without established "
                "identity). Please use API Key or other form of API consumer identity to call this API."
            )
            await responder.send(
                403, [_JSON], _encode(google_error(403, "PERMISSION_DENIED", message))
            )
            return
        if self.api_key is not None and key != self.api_key:
            await responder.send(400, [_JSON], _encode(invalid_key_body()))
            return
        problem = _body_problem(body, method)
        if problem is not None:
            error = google_error(400, "INVALID_ARGUMENT", problem)
            await responder.send(400, [_JSON], _encode(error))
            return
        taken = await self._next_behavior(responder)
        if taken is None:
            return
        behavior, serial = taken
        headers = [("server", "scaffolding on HTTPServer2"), *behavior.headers.items()]
        if behavior.status != 200:
            error_body = behavior.error_body or default_error_body(behavior.status, model)
            await responder.send(behavior.status, [_JSON, *headers], _encode(error_body))
            return
        if method == "batchEmbedContents":
            await self._embed(behavior, body, responder, [_JSON, *headers])
            return
        answer = _Answer(behavior, body, model, serial)
        if method == "generateContent":
            payload = _MALFORMED_JSON if behavior.malformed else answer.whole()
            await send_whole(behavior, payload, responder, [_JSON, *headers])
        elif query.get("alt") == "sse":
            await self._sse(answer, responder, [_SSE, *headers])
        else:
            frames = [
                frame.removeprefix(b"data: ").removesuffix(b"\r\n\r\n") for frame in answer.frames()
            ]
            await responder.send(200, [_JSON, *headers], b"[" + b",\r\n".join(frames) + b"]")

    @staticmethod
    async def _embed(
        behavior: Behavior, body: dict[str, Any], responder: Responder, headers: list[Any]
    ) -> None:
        """One vector per request, ``outputDimensionality`` (default 4) long, from a hash of
        its text."""
        requests = body.get("requests") or []
        if len(requests) > MAX_EMBED_BATCH:
            message = f"* BatchEmbedContentsRequest.requests: at most {MAX_EMBED_BATCH} requests can be in one batch"
            error = google_error(400, "INVALID_ARGUMENT", message)
            await responder.send(400, headers, _encode(error))
            return
        embeddings = []
        for one in requests:
            text = "".join(part.get("text", "") for part in one["content"]["parts"])
            size = one.get("outputDimensionality") or 4
            digest = hashlib.sha256(text.encode()).digest()
            embeddings.append({"values": [digest[i % 32] / 255 for i in range(size)]})
        payload = _MALFORMED_JSON if behavior.malformed else _encode({"embeddings": embeddings})
        await send_whole(behavior, payload, responder, headers)

    @staticmethod
    async def _sse(answer: _Answer, responder: Responder, headers: list[tuple[str, str]]) -> None:
        behavior = answer.behavior
        drop_after, failure = behavior.drop_after_chunks, behavior.error_in_stream
        await start_stream(behavior, responder, headers)
        for sent, frame in enumerate(answer.frames()):
            if drop_after is not None and sent >= drop_after:
                responder.abort()
                return
            if failure is not None and sent >= failure[0]:
                await responder.write(answer.frame(_encode(failure[1])))
                break
            if behavior.pause_after_chunks and sent == behavior.pause_after_chunks[0]:
                await asyncio.sleep(behavior.pause_after_chunks[1])
            if sent and behavior.delay_between_chunks:
                await asyncio.sleep(behavior.delay_between_chunks)
            await responder.write(frame)
            if behavior.malformed:
                await responder.write(_MALFORMED_FRAME)
                break
        if drop_after is not None:
            responder.abort()
            return
        await responder.end()


def _parse_query(raw: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(raw))
