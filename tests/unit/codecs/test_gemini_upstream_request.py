"""encode_upstream_request / request_path: the IR as a Gemini generateContent body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gw.codecs.gemini.upstream_request import (
    SKIP_SIGNATURE,
    TOOL_CHOICE_MODES,
    encode_upstream_request,
    request_path,
)
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    Message,
    NativeBlock,
    Reasoning,
    ResponseFormat,
    Sampling,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

HI = UserMessage(content=(TextPart(text="hi"),))
CALL = ToolCall(id="c1", name="f", arguments='{"x": 1}')


def encoded(request: ChatRequest) -> tuple[dict[str, Any], tuple[str, ...]]:
    body, notes = encode_upstream_request(request)
    result: dict[str, Any] = json.loads(body)
    return result, notes


def contents(*messages: Message) -> list[dict[str, Any]]:
    body, _ = encoded(ChatRequest(model="m", messages=messages))
    result: list[dict[str, Any]] = body["contents"]
    return result


@pytest.mark.parametrize(
    ("model", "stream", "path"),
    [
        ("gemini-2.5-flash", False, "/v1beta/models/gemini-2.5-flash:generateContent"),
        ("gemini-2.5-flash", True, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
        ("models/gemini-2.5-pro", False, "/v1beta/models/gemini-2.5-pro:generateContent"),
        ("tunedModels/my-model", False, "/v1beta/tunedModels/my-model:generateContent"),
        ("../evil?x=1", False, "/v1beta/models/..%2Fevil%3Fx%3D1:generateContent"),
    ],
)
def test_request_path(model: str, stream: bool, path: str) -> None:
    assert request_path(model, stream=stream) == path


def test_minimal_body_invents_nothing_but_one_candidate() -> None:
    assert encoded(ChatRequest(model="route", messages=(HI,))) == (
        {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "generationConfig": {"candidateCount": 1},
        },
        (),
    )


def test_generation_config() -> None:
    request = ChatRequest(
        model="m",
        messages=(HI,),
        sampling=Sampling(
            temperature=0.2,
            top_p=0.9,
            top_k=40,
            presence_penalty=0.1,
            frequency_penalty=0.3,
            seed=7,
        ),
        stop=("x", "y"),
        max_tokens=50,
    )

    assert encoded(request)[0]["generationConfig"] == {
        "candidateCount": 1,
        "temperature": 0.2,
        "topP": 0.9,
        "topK": 40,
        "presencePenalty": 0.1,
        "frequencyPenalty": 0.3,
        "seed": 7,
        "maxOutputTokens": 50,
        "stopSequences": ["x", "y"],
    }


def test_system_messages_join_the_system_instruction() -> None:
    request = ChatRequest(
        model="m",
        messages=(
            SystemMessage(content=(TextPart(text="a"), TextPart(text="b"))),
            HI,
            SystemMessage(content=(TextPart(text="late"),)),
        ),
    )

    body, notes = encoded(request)

    assert body["systemInstruction"] == {"parts": [{"text": "a"}, {"text": "b"}, {"text": "late"}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert notes == ("messages[2]: system message moved into systemInstruction",)


def test_images() -> None:
    parts = contents(
        UserMessage(
            content=(
                ImagePart(data="R0lGODlh"),
                ImagePart(data="AAAA", media_type="image/heic"),
                ImagePart(url="data:image/webp;base64,UklGRg=="),
                ImagePart(url="https://generativelanguage.googleapis.com/v1beta/files/abc123"),
            )
        )
    )[0]["parts"]

    assert parts == [
        {"inlineData": {"mimeType": "image/gif", "data": "R0lGODlh"}},
        {"inlineData": {"mimeType": "image/heic", "data": "AAAA"}},
        {"inlineData": {"mimeType": "image/webp", "data": "UklGRg=="}},
        {"fileData": {"fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc123"}},
    ]


def test_image_detail_is_noted() -> None:
    _, notes = encoded(
        ChatRequest(
            model="m", messages=(UserMessage(content=(ImagePart(data="AAAA", detail="low"),)),)
        )
    )

    assert notes == ("messages[0].content[0].detail: dropped (no Gemini field)",)


@pytest.mark.parametrize(
    ("part", "error"),
    [
        (ImagePart(url="https://example.com/cat.png"), NativeFeatureUnsupportedError),
        (ImagePart(url="data:image/png,rawbytes"), InvalidRequestError),
    ],
)
def test_images_gemini_cannot_take(part: ImagePart, error: type[Exception]) -> None:
    request = ChatRequest(model="m", messages=(UserMessage(content=(TextPart(text="x"), part)),))

    with pytest.raises(error) as caught:
        encode_upstream_request(request)

    assert getattr(caught.value, "param", None) == "messages[0].content[1]"


def test_assistant_turns_and_tool_results() -> None:
    result = contents(
        HI,
        AssistantMessage(
            content=(TextPart(text="Let me check."),),
            tool_calls=(CALL, ToolCall(id="c2", name="g", arguments="")),
        ),
        ToolMessage(tool_call_id="c2", content=(TextPart(text="[1, 2]"),)),
        ToolMessage(tool_call_id="c1", content=(TextPart(text='{"ok": '), TextPart(text="true}"))),
        UserMessage(content=(TextPart(text="thanks"),)),
        AssistantMessage(content=(TextPart(text="You're welcome."),)),
    )

    assert result[1:] == [
        {
            "role": "model",
            "parts": [
                {"text": "Let me check."},
                {
                    "functionCall": {"name": "f", "args": {"x": 1}},
                    "thoughtSignature": SKIP_SIGNATURE,
                },
                {"functionCall": {"name": "g", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "g", "response": {"output": "[1, 2]"}}},
                {"functionResponse": {"name": "f", "response": {"ok": True}}},
            ],
        },
        {"role": "user", "parts": [{"text": "thanks"}]},
        {"role": "model", "parts": [{"text": "You're welcome."}]},
    ]


def test_error_results_and_images_in_results() -> None:
    result = contents(
        HI,
        AssistantMessage(tool_calls=(CALL,)),
        ToolMessage(
            tool_call_id="c1",
            content=(TextPart(text='{"code": 7}'), ImagePart(data="iVBORw0K")),
            is_error=True,
        ),
    )

    assert result[-1]["parts"] == [
        {
            "functionResponse": {
                "name": "f",
                "response": {"error": {"code": 7}},
                "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}}],
            }
        }
    ]


def test_a_result_for_an_unknown_call_is_refused() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        contents(HI, ToolMessage(tool_call_id="nope", content=(TextPart(text="x"),)))

    assert caught.value.param == "messages[1].tool_call_id"


def test_non_object_arguments_are_wrapped_and_noted() -> None:
    body, notes = encoded(
        ChatRequest(
            model="m",
            messages=(
                HI,
                AssistantMessage(tool_calls=(ToolCall(id="c", name="f", arguments="[1]"),)),
            ),
        )
    )

    assert body["contents"][1]["parts"][0]["functionCall"]["args"] == {"arguments": [1]}
    assert notes == (
        'messages[1].tool_calls[0].arguments: not a JSON object; sent as {"arguments": ...}',
    )


def test_signatures_go_back_where_they_came_from() -> None:
    signed_thought = ThinkingPart(text="Thinking...", signature="sig-thought")
    result = contents(
        HI,
        AssistantMessage(
            content=(
                signed_thought,
                ThinkingPart(signature="sig-call"),
                ThinkingPart(text="unsigned summary"),
            ),
            tool_calls=(CALL, ToolCall(id="c2", name="g", arguments="{}")),
        ),
        ToolMessage(tool_call_id="c1", content=(TextPart(text="1"),)),
        ToolMessage(tool_call_id="c2", content=(TextPart(text="2"),)),
        AssistantMessage(content=(ThinkingPart(signature="sig-text"), TextPart(text="Done."))),
    )

    assert result[1]["parts"] == [
        {"text": "Thinking...", "thought": True, "thoughtSignature": "sig-thought"},
        {"functionCall": {"name": "f", "args": {"x": 1}}, "thoughtSignature": "sig-call"},
        {"functionCall": {"name": "g", "args": {}}},
    ]
    assert result[3]["parts"] == [{"text": "Done.", "thoughtSignature": "sig-text"}]


def test_a_thought_s_signature_stays_on_it_and_the_call_gets_the_skip_value() -> None:
    """It may be another provider's (an Anthropic answer before a fallback): on a call,
    Gemini would refuse it."""
    result = contents(
        HI,
        AssistantMessage(
            content=(ThinkingPart(text="Claude thought.", signature="claude-sig"),),
            tool_calls=(CALL,),
        ),
    )

    assert result[1]["parts"] == [
        {"text": "Claude thought.", "thought": True, "thoughtSignature": "claude-sig"},
        {"functionCall": {"name": "f", "args": {"x": 1}}, "thoughtSignature": SKIP_SIGNATURE},
    ]


def test_thinking_gemini_cannot_read_is_noted() -> None:
    _, notes = encoded(
        ChatRequest(
            model="m",
            messages=(
                HI,
                AssistantMessage(
                    content=(
                        ThinkingPart(text="hmm"),
                        ThinkingPart(redacted="xxx"),
                        TextPart(text="ok"),
                    )
                ),
            ),
        )
    )

    assert notes == ("messages[1].content: thinking without a Gemini signature dropped",) * 2


def test_tools_and_choice() -> None:
    request = ChatRequest(
        model="m",
        messages=(HI,),
        tools=(
            ToolDefinition(
                name="now", description="The time", parameters={"type": "object", "properties": {}}
            ),
            ToolDefinition(
                name="get",
                parameters={"type": "object", "properties": {"id": {"type": "string"}}},
                strict=True,
            ),
        ),
        tool_choice=ToolChoice(mode="required"),
        parallel_tool_calls=False,
        user="u-1",
    )

    body, notes = encoded(request)

    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "now", "description": "The time"},
                {
                    "name": "get",
                    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
                },
            ]
        }
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert notes == (
        "tools[1].strict: not enforced by Gemini",
        "parallel_tool_calls: false cannot be expressed; Gemini may call several",
        "user: dropped (no Gemini field)",
    )


@pytest.mark.parametrize(("mode", "expected"), sorted(TOOL_CHOICE_MODES.items()))
def test_every_tool_choice_mode(mode: str, expected: str) -> None:
    choice = ToolChoice(mode=mode, name="f" if mode == "tool" else None)  # type: ignore[arg-type]
    body, _ = encoded(ChatRequest(model="m", messages=(HI,), tool_choice=choice))

    assert body["toolConfig"]["functionCallingConfig"]["mode"] == expected


def test_json_schema_response_format_reports_removals() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "additionalProperties": False,
    }
    fmt = ResponseFormat(type="json_schema", name="out", json_schema=schema, strict=True)

    body, notes = encoded(ChatRequest(model="m", messages=(HI,), response_format=fmt))

    assert body["generationConfig"]["responseSchema"] == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }
    assert body["generationConfig"]["responseMimeType"] == "application/json"
    assert notes == ("response_format.json_schema.additionalProperties: removed",)


def test_free_form_objects_go_as_json_schema() -> None:
    """Gemini's Schema refuses an OBJECT without properties ("should be non-empty for
    OBJECT type"): such a tool, or response format, is sent as plain JSON Schema."""
    free = {
        "type": "object",
        "properties": {"url": {"type": "string"}, "headers": {"type": "object"}},
        "additionalProperties": False,
    }
    no_args = ToolDefinition(
        name="ping", parameters={"type": "object", "properties": {}, "additionalProperties": False}
    )
    any_keys = {"type": "object", "additionalProperties": {"type": "string"}}
    typed = ToolDefinition(name="get", parameters={"type": "object", "properties": {"q": {}}})
    fmt = ResponseFormat(type="json_schema", json_schema={"type": "object"})
    request = ChatRequest(
        model="m",
        messages=(HI,),
        tools=(
            ToolDefinition(name="fetch", parameters=free),
            no_args,
            typed,
            ToolDefinition(name="tag", parameters=any_keys),
        ),
        response_format=fmt,
    )

    body, notes = encoded(request)

    declarations = body["tools"][0]["functionDeclarations"]
    assert declarations[0] == {"name": "fetch", "parametersJsonSchema": free}
    assert declarations[1] == {"name": "ping"}
    assert declarations[2] == {
        "name": "get",
        "parameters": {"type": "object", "properties": {"q": {}}},
    }
    assert declarations[3] == {"name": "tag", "parametersJsonSchema": any_keys}
    assert body["generationConfig"]["responseJsonSchema"] == {"type": "object"}
    assert "responseSchema" not in body["generationConfig"]
    assert notes == (
        "tools[0].parameters: sent as parametersJsonSchema: Gemini's Schema has no form for an "
        "object without properties (tools[0].parameters.properties.headers); needs a Gemini 2.5 "
        "or newer model",
        "tools[1].parameters.additionalProperties: removed",
        "tools[3].parameters: sent as parametersJsonSchema: Gemini's Schema has no form for an "
        "object without properties (tools[3].parameters); needs a Gemini 2.5 or newer model",
        "response_format.json_schema: sent as responseJsonSchema: Gemini's Schema has no form "
        "for an object without properties (response_format.json_schema); needs a Gemini 2.5 or "
        "newer model",
    )


def test_text_response_format_sends_nothing() -> None:
    body, _ = encoded(
        ChatRequest(model="m", messages=(HI,), response_format=ResponseFormat(type="text"))
    )

    assert body["generationConfig"] == {"candidateCount": 1}


@pytest.mark.parametrize(
    ("reasoning", "config", "notes"),
    [
        (Reasoning(budget_tokens=0), {"thinkingBudget": 0, "includeThoughts": False}, ()),
        (Reasoning(effort="minimal"), {"thinkingBudget": 512, "includeThoughts": True}, ()),
        (Reasoning(effort="high"), {"thinkingBudget": 24576, "includeThoughts": True}, ()),
        (Reasoning(), {"includeThoughts": True}, ()),
        (
            Reasoning(budget_tokens=512, effort="high"),
            {"thinkingBudget": 512, "includeThoughts": True},
            ("reasoning.effort: not sent beside a budget (Gemini takes one of them)",),
        ),
    ],
)
def test_reasoning(reasoning: Reasoning, config: dict[str, Any], notes: tuple[str, ...]) -> None:
    body, got = encoded(ChatRequest(model="m", messages=(HI,), reasoning=reasoning))

    assert body["generationConfig"]["thinkingConfig"] == config
    assert got == notes


def test_extensions_merge_but_never_replace_what_gw_computed() -> None:
    request = ChatRequest(
        model="m",
        messages=(HI,),
        max_tokens=10,
        tools=(ToolDefinition(name="f"),),
        extensions={
            "gemini": {
                "safetySettings": [
                    {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}
                ],
                "generationConfig": {
                    "maxOutputTokens": 99999,
                    "candidateCount": 4,
                    "responseLogprobs": True,
                },
                "tools": [{"googleSearch": {}}],
                "contents": [],
                "systemInstruction": {"parts": [{"text": "evil"}]},
            },
            "openai": {"logprobs": True},
        },
    )

    body, _ = encoded(request)

    assert body["safetySettings"] == [
        {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}
    ]
    assert body["generationConfig"] == {
        "candidateCount": 1,
        "maxOutputTokens": 10,
        "responseLogprobs": True,
    }
    assert body["tools"] == [{"functionDeclarations": [{"name": "f"}]}, {"googleSearch": {}}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert "systemInstruction" not in body
    assert "logprobs" not in body


def test_empty_text_parts_and_turns_left_empty_are_dropped_with_a_note() -> None:
    """Gemini refuses ``{"text": ""}`` ("required oneof field 'data'") and empty turns."""
    empty, hi = TextPart(text=""), TextPart(text="hi")
    body, notes = encoded(
        ChatRequest(
            model="m",
            messages=(
                SystemMessage(content=(empty, TextPart(text="rules"))),
                UserMessage(content=()),
                AssistantMessage(content=(empty,)),
                UserMessage(content=(empty, hi)),
                AssistantMessage(content=(TextPart(text="ok"), empty)),
            ),
        )
    )
    assert body["systemInstruction"] == {"parts": [{"text": "rules"}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "ok"}]},
    ]
    assert notes == (
        "messages[1]: empty turn dropped (Gemini refuses empty text)",
        "messages[2]: empty turn dropped (Gemini refuses empty text)",
    )


def test_names_are_noted() -> None:
    _, notes = encoded(
        ChatRequest(model="m", messages=(UserMessage(content=(TextPart(text="x"),), name="ann"),))
    )

    assert notes == ("messages[0].name: dropped (no Gemini field)",)


def test_geminis_own_tools_go_beside_the_functions_and_other_formats_are_left_out() -> None:
    search = NativeBlock(format="gemini", data={"googleSearch": {}})
    foreign = NativeBlock(format="anthropic", data={"type": "web_search_20250305"})
    tool = ToolDefinition(name="f", parameters={"type": "object", "properties": {}})
    body, _ = encoded(
        ChatRequest(model="m", messages=(HI,), tools=(tool,), native_tools=(search, foreign))
    )
    assert body["tools"][1:] == [{"googleSearch": {}}]
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "f"
    alone, _ = encoded(ChatRequest(model="m", messages=(HI,), native_tools=(search,)))
    assert alone["tools"] == [{"googleSearch": {}}]
