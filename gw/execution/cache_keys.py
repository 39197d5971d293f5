"""The response cache's keys: a SHA-256 of a scope and the request in canonical form (what
the answer depends on; see gw/execution/response_cache.py for what is left out)."""

from __future__ import annotations

import hashlib

import msgspec

from gw.ir import ChatRequest, ChatResponse, TextPart


def _canonical(request: ChatRequest) -> ChatRequest:
    """The request as far as the answer depends on it."""
    messages = request.messages
    if any(
        isinstance(part, TextPart) and part.cache is not None
        for message in messages
        for part in message.content
    ):
        messages = tuple(
            msgspec.structs.replace(
                message,
                content=tuple(
                    msgspec.structs.replace(part, cache=None)
                    if isinstance(part, TextPart) and part.cache is not None
                    else part
                    for part in message.content
                ),
            )
            for message in messages
        )
    return msgspec.structs.replace(
        request,
        messages=messages,
        stream=False,
        include_usage=False,
        user=None,
        max_tokens=None,
    )


_ENCODER = msgspec.json.Encoder(order="deterministic")


def cache_key(request: ChatRequest, scope: str) -> str:
    """The entry's key: a SHA-256 of the scope and the canonical request."""
    digest = hashlib.sha256(scope.encode())
    digest.update(b"\x00")
    digest.update(_ENCODER.encode(_canonical(request)))
    return digest.hexdigest()


def answer_size(response: ChatResponse) -> int:
    return len(_ENCODER.encode(response))
