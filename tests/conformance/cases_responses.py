"""OpenAI Responses clients (``POST /v1/responses``): the fields the table lists."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance import concepts as c
from conformance import conversation as talk
from conformance import markers as m
from conformance.case import Case, Client
from gw.codecs.openai_responses.client_request import decode_responses_request
from gw.ir import ChatRequest

TOOL = {"type": "function", "name": m.TOOL, "description": "Weather", "parameters": m.PARAMETERS}
WEB_SEARCH = {"type": "web_search"}
CALL = {
    "type": "function_call",
    "call_id": m.CALL_ID,
    "name": m.TOOL,
    "arguments": '{"city": "Paris"}',
}
OUTPUT = {"type": "function_call_output", "call_id": m.CALL_ID, "output": m.RESULT_TEXT}
REASONING_ITEM = {
    "type": "reasoning",
    "id": "rs_7f3",
    "summary": [],
    "encrypted_content": "ZW5jLTdmMw==",
}
SEARCH_CALL = {
    "type": "web_search_call",
    "id": "ws_7f3",
    "status": "completed",
    "action": {"type": "search", "query": "weather"},
}


def _decode(body: bytes, headers: Mapping[str, str], stream: bool) -> ChatRequest:
    return decode_responses_request(body)


def _say(*parts: dict[str, Any]) -> dict[str, Any]:
    """A body whose input is one user message of ``parts``."""
    return {"input": [{"role": "user", "content": list(parts)}]}


def _earlier(*items: dict[str, Any]) -> dict[str, Any]:
    """Input whose model turn held ``items`` before its answer."""
    answer = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "ok"}],
    }
    return {
        "input": [
            {"role": "user", "content": "hi"},
            *items,
            answer,
            {"role": "user", "content": "and now?"},
        ]
    }


def _tools(**body: Any) -> dict[str, Any]:
    return {"tools": [TOOL], **body}


def _file(**fields: Any) -> dict[str, Any]:
    return _say({"type": "input_text", "text": "summarise"}, {"type": "input_file", **fields})


DATA_URL = f"data:image/png;base64,{m.IMAGE_DATA}"
PDF_DATA_URL = f"data:application/pdf;base64,{m.PDF_DATA}"

CASES = (
    Case("`input` (string)", {"input": m.USER_TEXT}, talk.said(m.USER_TEXT, role="user")),
    Case(
        "`input[]: message` (user, `input_text`)",
        _say({"type": "input_text", "text": m.USER_TEXT}),
        talk.said(m.USER_TEXT, role="user"),
    ),
    Case("`instructions`", {"instructions": m.SYSTEM_TEXT}, talk.SYSTEM),
    Case(
        "`input[]: message` (developer)",
        {
            "input": [
                {"role": "developer", "content": m.SYSTEM_TEXT},
                {"role": "user", "content": "hi"},
            ]
        },
        talk.SYSTEM,
    ),
    Case(
        "`input[]: message` (assistant, `output_text`)",
        _earlier(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": m.ASSISTANT_TEXT}],
            }
        ),
        talk.said(m.ASSISTANT_TEXT, role="assistant"),
    ),
    Case(
        "`input_text.cache_control`",
        _say({"type": "input_text", "text": "long prompt", "cache_control": {"type": "ephemeral"}}),
        c.CACHE_MARK,
    ),
    Case(
        "`input_image` (https)",
        _say({"type": "input_image", "image_url": m.IMAGE_URL}),
        talk.IMAGE_BY_URL,
    ),
    Case(
        "`input_image` (data: URL)",
        _say({"type": "input_image", "image_url": DATA_URL}),
        talk.IMAGE_INLINE,
    ),
    Case(
        "`input_image.detail`",
        _say({"type": "input_image", "image_url": DATA_URL, "detail": "low"}),
        talk.IMAGE_DETAIL,
    ),
    Case("`input_file` (file_data)", _file(file_data=PDF_DATA_URL), talk.FILE_INLINE),
    Case("`input_file` (file_url)", _file(file_url=m.PDF_URL), talk.FILE_BY_URL),
    Case("`input_file` (file_id)", _file(file_id=m.FILE_ID), talk.FILE_BY_ID),
    Case(
        "`input_file.filename`",
        _file(file_data=PDF_DATA_URL, filename=m.FILENAME),
        talk.FILENAME_GIVEN,
    ),
    Case(
        "`input[]: function_call`",
        _tools(input=[{"role": "user", "content": "hi"}, CALL, OUTPUT]),
        talk.TOOL_CALL,
    ),
    Case(
        "`input[]: function_call_output`",
        _tools(input=[{"role": "user", "content": "hi"}, CALL, OUTPUT]),
        talk.TOOL_RESULT,
    ),
    Case(
        "`input[]: reasoning`",
        _earlier(REASONING_ITEM),
        talk.native_block("openai_responses", "reasoning"),
    ),
    Case(
        "`input[]: web_search_call`",
        _earlier(SEARCH_CALL),
        talk.native_block("openai_responses", "web_search_call"),
    ),
    Case("`tools[]: function`", _tools(), c.FUNCTION_TOOL),
    Case("`tools[].strict`", {"tools": [{**TOOL, "strict": True}]}, c.TOOL_STRICT),
    Case(
        "`tools[]: namespace` (Codex's sub-agents)",
        {
            "tools": [
                {
                    "type": "namespace",
                    "name": "multi_agent_v1",
                    "description": "Sub-agents",
                    "tools": [
                        {"type": "function", "name": "spawn_agent", "parameters": m.PARAMETERS}
                    ],
                }
            ]
        },
        c.NAMESPACED,
    ),
    Case(
        "`tools[]: web_search` (alone)",
        {"tools": [WEB_SEARCH]},
        c.native_tool("openai_responses", "web_search"),
    ),
    Case(
        "`tools[]: web_search` (beside a function)",
        {"tools": [TOOL, WEB_SEARCH]},
        c.native_tool("openai_responses", "web_search"),
    ),
    Case("`tool_choice: auto`", _tools(tool_choice="auto"), c.CHOICE_AUTO),
    Case("`tool_choice: none`", _tools(tool_choice="none"), c.CHOICE_NONE),
    Case("`tool_choice: required`", _tools(tool_choice="required"), c.CHOICE_REQUIRED),
    Case(
        "`tool_choice: {function}`",
        _tools(tool_choice={"type": "function", "name": m.TOOL}),
        c.CHOICE_NAMED,
    ),
    Case(
        "`tool_choice: {web_search}`",
        {"tools": [TOOL, WEB_SEARCH], "tool_choice": {"type": "web_search"}},
        c.CHOICE_BUILTIN,
    ),
    Case("`parallel_tool_calls: false`", _tools(parallel_tool_calls=False), c.NO_PARALLEL_CALLS),
    Case(
        "`text.format: json_object`", {"text": {"format": {"type": "json_object"}}}, c.JSON_OBJECT
    ),
    Case(
        "`text.format: json_schema`",
        {
            "text": {
                "format": {
                    "type": "json_schema",
                    "name": "answer",
                    "schema": m.SCHEMA,
                    "strict": True,
                }
            }
        },
        c.JSON_SCHEMA,
    ),
    Case(
        "`text.verbosity`",
        {"text": {"verbosity": "low"}},
        c.passthrough("openai_responses", "text.verbosity"),
    ),
    Case("`reasoning.effort`", {"reasoning": {"effort": "high"}}, c.REASONING),
    Case("`reasoning.summary`", {"reasoning": {"summary": "auto"}}, c.REASONING_SUMMARY),
    Case("`max_output_tokens`", {"max_output_tokens": c.MAX_TOKENS_VALUE}, c.MAX_TOKENS),
    Case("`temperature`", {"temperature": 0.37}, c.TEMPERATURE),
    Case("`top_p`", {"top_p": 0.73}, c.TOP_P),
    Case("`user`", {"user": m.USER_ID}, c.USER),
    Case(
        "`metadata`", {"metadata": {"app": "demo"}}, c.passthrough("openai_responses", "metadata")
    ),
    Case("`store: true`", {"store": True}, c.passthrough("openai_responses", "store", True)),
    Case(
        "`safety_identifier`",
        {"safety_identifier": "who-7f3"},
        c.passthrough("openai_responses", "safety_identifier"),
    ),
    Case(
        "`max_tool_calls`",
        {"max_tool_calls": 3},
        c.passthrough("openai_responses", "max_tool_calls"),
    ),
    Case(
        "`include`",
        {"include": ["reasoning.encrypted_content"]},
        c.passthrough("openai_responses", "include"),
    ),
    Case("`truncation`", {"truncation": "auto"}, c.passthrough("openai_responses", "truncation")),
    Case(
        "`prompt_cache_key`",
        {"prompt_cache_key": "key-7f3"},
        c.passthrough("openai_responses", "prompt_cache_key"),
    ),
    Case(
        "`service_tier`",
        {"service_tier": "flex"},
        c.passthrough("openai_responses", "service_tier"),
    ),
    Case(
        "`previous_response_id`",
        {"previous_response_id": "resp_7f3"},
        c.passthrough("openai_responses", "previous_response_id"),
    ),
    Case("`stream: true`", {"stream": True}, c.STREAM),
)

CLIENT = Client(
    format="openai_responses",
    title="OpenAI Responses clients (`POST /v1/responses`)",
    base={"model": "m", "input": "hi"},
    decode=_decode,
    cases=CASES,
)
