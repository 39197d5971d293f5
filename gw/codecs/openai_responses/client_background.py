"""What the Responses endpoints answer for a background job: its ``response`` object while
it waits or after it failed, and its input items (``GET /v1/responses/{id}/input_items``).

A job's object echoes its request as every ``response`` object does (client_response.py);
once its content is gone (fetched or expired) there is nothing to echo, and the object
carries only its id, model, status and times.
"""

from __future__ import annotations

from typing import Any

from gw.codecs.openai_responses.client_response import JSONObject, item_id, response_object
from gw.ir import ChatRequest

# gw codes a failed response's error.code (one of OpenAI's own) says rate_limit_exceeded for.
_RATE_LIMITS = frozenset({"rate_limited", "concurrency_limited", "budget_exceeded"})
# ... and invalid_prompt: the request itself could not be served.
_INVALID = frozenset(
    {"invalid_request", "context_length_exceeded", "content_blocked", "native_feature_unsupported",
     "model_not_found", "permission_denied", "response_not_found"}
)  # fmt: skip
_TEXT_PARTS = {"user": "input_text", "system": "input_text", "developer": "input_text"}
MAX_ITEMS_PAGE = 100


def job_object(
    request: ChatRequest | None,
    *,
    response_id: str,
    created_at: float,
    model: str,
    status: str,
    error: tuple[str, str] | None = None,
) -> JSONObject:
    """The ``response`` object of a job without output (queued, in progress, failed,
    cancelled, or one whose content is gone); ``request`` None: nothing to echo."""
    echoed = request if request is not None else ChatRequest(model=model, messages=())
    return response_object(
        echoed,
        response_id=response_id,
        created_at=int(created_at),
        model=model,
        status=status,
        output=[],
        error=None if error is None else failure(*error),
    )


def failure(code: str, message: str) -> JSONObject:
    """A failed response's ``error``: OpenAI's code for gw's, and gw's message."""
    if code in _RATE_LIMITS:
        kind = "rate_limit_exceeded"
    elif code in _INVALID:
        kind = "invalid_prompt"
    else:
        kind = "server_error"
    return {"code": kind, "message": message}


def input_items(body: JSONObject, response_id: str) -> list[JSONObject]:
    """The request's ``input`` as the items OpenAI lists, oldest first: a string is one
    user message; a message's string content becomes one text part; an item without an
    ``id`` gets one from the response's id and its position."""
    given = body.get("input")
    if isinstance(given, str):
        given = [{"type": "message", "role": "user", "content": given}]
    if not isinstance(given, list):
        return []
    items: list[JSONObject] = []
    for index, raw in enumerate(given):
        if not isinstance(raw, dict):
            continue
        item: JSONObject = dict(raw)
        if item.get("type", "message") == "message":
            item["type"] = "message"
            item.setdefault("status", "completed")
            content = item.get("content")
            if isinstance(content, str):
                kind = _TEXT_PARTS.get(str(item.get("role")), "output_text")
                part: JSONObject = {"type": kind, "text": content}
                if kind == "output_text":
                    part["annotations"] = []
                item["content"] = [part]
        item.setdefault("id", item_id("in", response_id, index))
        items.append(item)
    return items


def items_page(
    items: list[JSONObject], *, after: str | None, limit: int, order: str
) -> dict[str, Any]:
    """One page of ``items`` as OpenAI's list object: ``order`` desc (the default) lists
    the newest first; ``after`` is the id of the last item of the previous page."""
    ordered = list(reversed(items)) if order == "desc" else list(items)
    if after is not None:
        ids = [item.get("id") for item in ordered]
        ordered = ordered[ids.index(after) + 1 :] if after in ids else []
    page = ordered[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(ordered) > len(page),
    }
