"""OpenAI chat clients (``POST /v1/chat/completions``): the fields the table lists."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance import concepts as c
from conformance import conversation as talk
from conformance import markers as m
from conformance.case import Case, Client
from gw.codecs.openai_chat.client_request import decode_chat_request
from gw.ir import ChatRequest

HI: dict[str, Any] = {"role": "user", "content": "hi"}
TOOLS = [
    {
        "type": "function",
        "function": {"name": m.TOOL, "description": "Weather", "parameters": m.PARAMETERS},
    }
]
CALLED = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": m.CALL_ID,
            "type": "function",
            "function": {"name": m.TOOL, "arguments": '{"city": "Paris"}'},
        }
    ],
}
ANSWERED = {"role": "tool", "tool_call_id": m.CALL_ID, "content": m.RESULT_TEXT}


def _decode(body: bytes, headers: Mapping[str, str], stream: bool) -> ChatRequest:
    return decode_chat_request(body)


def _say(*parts: dict[str, Any]) -> dict[str, Any]:
    """A body whose only message is a user turn of ``parts``."""
    return {"messages": [{"role": "user", "content": list(parts)}]}


def _tools(**body: Any) -> dict[str, Any]:
    return {"tools": TOOLS, **body}


IMAGE = {"type": "image_url", "image_url": {"url": m.IMAGE_URL}}
DATA_URL = f"data:image/png;base64,{m.IMAGE_DATA}"

CASES = (
    Case(
        "`messages[].role: system`",
        {"messages": [{"role": "system", "content": m.SYSTEM_TEXT}, HI]},
        talk.SYSTEM,
    ),
    Case(
        "`messages[].role: developer`",
        {"messages": [{"role": "developer", "content": m.SYSTEM_TEXT}, HI]},
        talk.SYSTEM,
    ),
    Case(
        "`messages[].role: user`",
        {"messages": [{"role": "user", "content": m.USER_TEXT}]},
        talk.said(m.USER_TEXT, role="user"),
    ),
    Case(
        "`messages[].role: assistant`",
        {"messages": [HI, {"role": "assistant", "content": m.ASSISTANT_TEXT}, HI]},
        talk.said(m.ASSISTANT_TEXT, role="assistant"),
    ),
    Case("`messages[].tool_calls`", _tools(messages=[HI, CALLED, ANSWERED]), talk.TOOL_CALL),
    Case("`messages[].role: tool`", _tools(messages=[HI, CALLED, ANSWERED]), talk.TOOL_RESULT),
    Case("`messages[].name`", {"messages": [{**HI, "name": m.MESSAGE_NAME}]}, talk.MESSAGE_NAMED),
    Case(
        "`content[]: text` (several parts)",
        _say({"type": "text", "text": m.USER_TEXT}, {"type": "text", "text": m.OTHER_TEXT}),
        talk.said(m.OTHER_TEXT, role="user"),
    ),
    Case(
        "`content[]: image_url` (https)",
        _say({"type": "text", "text": "what is it"}, IMAGE),
        talk.IMAGE_BY_URL,
    ),
    Case(
        "`content[]: image_url` (data: URL)",
        _say({"type": "image_url", "image_url": {"url": DATA_URL}}),
        talk.IMAGE_INLINE,
    ),
    Case(
        "`content[].image_url.detail`",
        _say({"type": "image_url", "image_url": {"url": DATA_URL, "detail": "low"}}),
        talk.IMAGE_DETAIL,
    ),
    Case(
        "`content[]: file` (file_data)",
        _say(
            {
                "type": "file",
                "file": {
                    "filename": m.FILENAME,
                    "file_data": f"data:application/pdf;base64,{m.PDF_DATA}",
                },
            }
        ),
        talk.FILE_INLINE,
    ),
    Case(
        "`content[]: input_audio`",
        _say({"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}),
        c.unmodelled("audio"),
    ),
    Case(
        "`content[].cache_control`",
        _say({"type": "text", "text": "long prompt", "cache_control": {"type": "ephemeral"}}),
        c.CACHE_MARK,
    ),
    Case("`tools[]` (function)", _tools(), c.FUNCTION_TOOL),
    Case(
        "`tools[].function.strict`",
        {
            "tools": [
                {
                    "type": "function",
                    "function": {"name": m.TOOL, "parameters": m.PARAMETERS, "strict": True},
                }
            ]
        },
        c.TOOL_STRICT,
    ),
    Case("`tool_choice: auto`", _tools(tool_choice="auto"), c.CHOICE_AUTO),
    Case("`tool_choice: none`", _tools(tool_choice="none"), c.CHOICE_NONE),
    Case("`tool_choice: required`", _tools(tool_choice="required"), c.CHOICE_REQUIRED),
    Case(
        "`tool_choice: {function}`",
        _tools(tool_choice={"type": "function", "function": {"name": m.TOOL}}),
        c.CHOICE_NAMED,
    ),
    Case("`parallel_tool_calls: false`", _tools(parallel_tool_calls=False), c.NO_PARALLEL_CALLS),
    Case(
        "`response_format: json_object`",
        {"response_format": {"type": "json_object"}},
        c.JSON_OBJECT,
    ),
    Case(
        "`response_format: json_schema`",
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": m.SCHEMA, "strict": True},
            }
        },
        c.JSON_SCHEMA,
    ),
    Case(
        "`response_format.json_schema.description`",
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "answer", "description": "answer-7f3", "schema": m.SCHEMA},
            }
        },
        c.SCHEMA_DESCRIPTION,
    ),
    Case("`temperature`", {"temperature": 0.37}, c.TEMPERATURE),
    Case("`top_p`", {"top_p": 0.73}, c.TOP_P),
    Case("`frequency_penalty`", {"frequency_penalty": 0.25}, c.FREQUENCY_PENALTY),
    Case("`presence_penalty`", {"presence_penalty": 0.35}, c.PRESENCE_PENALTY),
    Case("`seed`", {"seed": 4242}, c.SEED),
    Case("`stop`", {"stop": [m.STOP]}, c.STOP_SEQUENCES),
    Case("`max_tokens`", {"max_tokens": c.MAX_TOKENS_VALUE}, c.MAX_TOKENS),
    Case("`max_completion_tokens`", {"max_completion_tokens": c.MAX_TOKENS_VALUE}, c.MAX_TOKENS),
    Case("`reasoning_effort`", {"reasoning_effort": "high"}, c.REASONING),
    Case("`user`", {"user": m.USER_ID}, c.USER),
    Case("`metadata`", {"metadata": {"app": "demo"}}, c.passthrough("openai_chat", "metadata")),
    Case("`logit_bias`", {"logit_bias": {"1234": 5}}, c.passthrough("openai_chat", "logit_bias")),
    Case("`service_tier`", {"service_tier": "flex"}, c.passthrough("openai_chat", "service_tier")),
    Case("`store`", {"store": True}, c.passthrough("openai_chat", "store")),
    Case(
        "`web_search_options`",
        {"web_search_options": {}},
        c.passthrough("openai_chat", "web_search_options"),
    ),
    Case("`top_k` (extra_body, for vLLM)", {"top_k": 7}, c.TOP_K),
    Case("`n: 2`", {"n": 2}, c.unmodelled("n")),
    Case("`logprobs: true`", {"logprobs": True}, c.unmodelled("logprobs")),
    Case("`stream: true`", {"stream": True}, c.STREAM),
    Case(
        "`stream_options.include_usage`",
        {"stream": True, "stream_options": {"include_usage": True}},
        c.STREAM_USAGE,
    ),
)

CLIENT = Client(
    format="openai_chat",
    title="OpenAI chat clients (`POST /v1/chat/completions`)",
    base={"model": "m", "messages": [HI]},
    decode=_decode,
    cases=CASES,
)
