"""decode_generate_request: what google-genai sends becomes the IR; every error names its
field path and never quotes the client's text; what the IR cannot carry is refused by name."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types
from unit.codecs.gemini_sdk import NO_AFC, sent

from gw.codecs.gemini.client_request import (
    decode_count_tokens_request,
    decode_generate_request,
    encode_count_tokens_response,
)
from gw.codecs.gemini.upstream_request import encode_upstream_request
from gw.errors import GatewayError, InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    FilePart,
    ImagePart,
    NativeBlock,
    Reasoning,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

SECRET = "the launch code is 0000"
HI: Any = {"role": "user", "parts": [{"text": "hi"}]}


def decode(**fields: Any) -> ChatRequest:
    body = {"contents": [HI], **fields}
    return decode_generate_request(json.dumps(body).encode(), model="m", stream=False)


def refused(error: type[GatewayError], **fields: Any) -> GatewayError:
    with pytest.raises(error) as caught:
        decode(**fields)
    assert SECRET not in str(caught.value)
    return caught.value


def test_what_the_sdk_sends_becomes_the_ir() -> None:
    contents = [
        types.Content(
            role="user",
            parts=[
                types.Part(text="hi"),
                types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png"),
                types.Part.from_uri(file_uri="gs://b/x.pdf", mime_type="application/pdf"),
            ],
        ),
        types.Content(
            role="model",
            parts=[
                types.Part(text="I should look", thought=True),
                types.Part(
                    function_call=types.FunctionCall(name="f", args={"a": 1}, id="c1"),
                    thought_signature=b"\xfb\xff",
                ),
            ],
        ),
        types.Content(
            role="user",
            parts=[types.Part.from_function_response(name="f", response={"output": "ok"})],
        ),
    ]
    config = types.GenerateContentConfig(
        system_instruction="be brief",
        temperature=0.5,
        top_k=3,
        seed=7,
        max_output_tokens=100,
        stop_sequences=["x"],
        safety_settings=[
            types.SafetySetting(category="HARM_CATEGORY_HATE_SPEECH", threshold="BLOCK_NONE")
        ],
        response_modalities=["TEXT"],
        thinking_config=types.ThinkingConfig(thinking_budget=2048, include_thoughts=True),
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name="f",
                        description="does f",
                        parameters=types.Schema(
                            type="OBJECT",
                            properties={"a": types.Schema(type="INTEGER", nullable=True)},
                            required=["a"],
                        ),
                    )
                ]
            ),
            types.Tool(google_search=types.GoogleSearch()),
        ],
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(
                mode="ANY", allowed_function_names=["f"]
            )
        ),
        automatic_function_calling=NO_AFC,
    )
    request = decode_generate_request(sent(contents, config), model="openai/gpt-4o", stream=True)
    assert request.model == "openai/gpt-4o"
    assert request.stream
    assert request.include_usage
    assert request.messages == (
        SystemMessage(content=(TextPart(text="be brief"),)),
        UserMessage(
            content=(
                TextPart(text="hi"),
                ImagePart(data="iVBORw==", media_type="image/png"),
                FilePart(url="gs://b/x.pdf", media_type="application/pdf"),
            )
        ),
        AssistantMessage(
            content=(ThinkingPart(text="I should look"), ThinkingPart(signature="+/8=")),
            tool_calls=(ToolCall(id="c1", name="f", arguments='{"a":1}'),),
        ),
        ToolMessage(tool_call_id="c1", content=(TextPart(text="ok"),)),
    )
    schema = {
        "type": "object",
        "properties": {"a": {"type": ["integer", "null"]}},
        "required": ["a"],
    }
    assert request.tools == (ToolDefinition(name="f", description="does f", parameters=schema),)
    assert request.native_tools == (NativeBlock(format="gemini", data={"googleSearch": {}}),)
    assert request.tool_choice == ToolChoice(mode="tool", name="f")
    assert request.sampling.temperature == 0.5
    assert (request.sampling.top_k, request.sampling.seed) == (3, 7)  # topK arrives as 3.0
    assert (request.max_tokens, request.stop) == (100, ("x",))
    assert request.reasoning == Reasoning(budget_tokens=2048)
    gemini = request.extensions["gemini"]
    assert gemini["safetySettings"] == [
        {"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}
    ]
    assert gemini["generationConfig"] == {
        "responseModalities": ["TEXT"],
        "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": True},
    }


def test_a_response_schema_from_the_sdk_becomes_json_schema() -> None:
    config = types.GenerateContentConfig(
        response_mime_type="application/json",
        response_schema=types.Schema(
            type="OBJECT",
            properties={
                "tags": types.Schema(
                    type="ARRAY", min_items=1, items=types.Schema(type="STRING", enum=["a", "b"])
                ),
                "n": types.Schema(
                    any_of=[types.Schema(type="STRING"), types.Schema(type="INTEGER")]
                ),
            },
            property_ordering=["tags", "n"],
            example={"tags": ["a"]},
        ),
    )
    request = decode_generate_request(sent("hi", config), model="m", stream=False)
    assert request.response_format == ResponseFormat(
        type="json_schema",
        name="response",
        json_schema={
            "type": "object",
            "properties": {
                "tags": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "enum": ["a", "b"]},
                },
                "n": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            },
            "examples": [{"tags": ["a"]}],
        },
    )


def test_json_schema_forms_are_kept_as_sent() -> None:
    raw = {
        "type": "object",
        "properties": {"snake_case": {"type": "string"}},
        "additionalProperties": False,
    }
    config = types.GenerateContentConfig(
        response_mime_type="application/json",
        response_json_schema=raw,
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(name="g", parameters_json_schema=raw)
                ]
            )
        ],
        automatic_function_calling=NO_AFC,
    )
    request = decode_generate_request(sent("hi", config), model="m", stream=False)
    assert request.response_format is not None
    assert request.response_format.json_schema == raw
    assert request.tools[0].parameters == raw
    json_mode = decode(generationConfig={"responseMimeType": "application/json"})
    assert json_mode.response_format == ResponseFormat(type="json_object")


@pytest.mark.parametrize(
    ("thinking", "expected"),
    [
        ({"thinkingBudget": -1}, Reasoning(adaptive=True)),
        ({"thinkingBudget": 0}, Reasoning(budget_tokens=0)),
        ({"thinkingLevel": "HIGH"}, Reasoning(effort="high")),
        ({"thinking_level": "low"}, Reasoning(effort="low")),
        ({"includeThoughts": True}, None),
    ],
)
def test_thinking_config(thinking: dict[str, Any], expected: Reasoning | None) -> None:
    assert decode(generationConfig={"thinkingConfig": thinking}).reasoning == expected


def test_calls_without_ids_get_stable_ones_and_results_find_them_by_name() -> None:
    contents = [
        HI,
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
                {"functionCall": {"name": "weather", "args": {"city": "Rome"}}},
                {"functionCall": {"name": "time"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "time", "response": {"now": "noon"}}},
                {"functionResponse": {"name": "weather", "response": {"output": "rain"}}},
                {"functionResponse": {"name": "weather", "response": {"error": "no data"}}},
                {"text": "and?"},
            ],
        },
    ]
    request = decode(contents=contents)
    assistant = request.messages[1]
    assert isinstance(assistant, AssistantMessage)
    assert [c.id for c in assistant.tool_calls] == ["call_1_0", "call_1_1", "call_1_2"]
    assert assistant.tool_calls[2].arguments == "{}"
    assert request.messages[2:] == (
        ToolMessage(tool_call_id="call_1_2", content=(TextPart(text='{"now":"noon"}'),)),
        ToolMessage(tool_call_id="call_1_0", content=(TextPart(text="rain"),)),
        ToolMessage(tool_call_id="call_1_1", content=(TextPart(text="no data"),), is_error=True),
        UserMessage(content=(TextPart(text="and?"),)),
    )
    again = decode(contents=contents)
    assert again.messages == request.messages  # the same ids on every request


def test_a_result_is_paired_by_id_before_name() -> None:
    contents = [
        HI,
        {
            "role": "model",
            "parts": [
                {"functionCall": {"id": "a", "name": "f", "args": {}}},
                {"functionCall": {"id": "b", "name": "f", "args": {}}},
            ],
        },
        {"role": "user", "parts": [{"functionResponse": {"id": "b", "name": "f", "response": {}}}]},
    ]
    result = decode(contents=contents).messages[-1]
    assert isinstance(result, ToolMessage)
    assert result.tool_call_id == "b"


def test_consecutive_model_turns_are_one_and_a_signature_closes_a_thought() -> None:
    """google-genai's chats keep each streamed chunk as a model turn of its own."""
    contents = [
        HI,
        {"role": "model", "parts": [{"text": "Let me ", "thought": True}]},
        {"role": "model", "parts": [{"text": "think.", "thought": True}]},
        {"role": "model", "parts": [{"text": "", "thought": True, "thoughtSignature": "ab-_"}]},
        {"role": "model", "parts": [{"text": "Hello"}]},
        {"role": "model", "parts": [{"text": "", "thoughtSignature": "c2ln"}]},
        {"role": "model", "parts": []},
        HI,
    ]
    assistant = decode(contents=contents).messages[1]
    assert assistant == AssistantMessage(
        content=(
            ThinkingPart(text="Let me think.", signature="ab+/"),
            TextPart(text="Hello"),
            ThinkingPart(signature="c2ln"),
        ),
        blocks=(
            ThinkingPart(text="Let me think.", signature="ab+/"),
            TextPart(text="Hello"),
            ThinkingPart(signature="c2ln"),
        ),
    )


def test_a_gemini_upstream_gets_signatures_and_calls_back_where_they_were() -> None:
    contents = [
        HI,
        {
            "role": "model",
            "parts": [
                {"text": "plan", "thought": True, "thoughtSignature": "dGhvdWdodA=="},
                {"functionCall": {"name": "f", "args": {"x": 1}}, "thoughtSignature": "Y2FsbA=="},
            ],
        },
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"y": 2}}}]},
    ]
    upstream = json.loads(encode_upstream_request(decode(contents=contents)).body)
    assert upstream["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"text": "plan", "thought": True, "thoughtSignature": "dGhvdWdodA=="},
                {"functionCall": {"name": "f", "args": {"x": 1}}, "thoughtSignature": "Y2FsbA=="},
            ],
        },
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"y": 2}}}]},
    ]


def test_model_turn_parts_only_gemini_has_are_kept_for_gemini() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    contents = [HI, {"role": "model", "parts": [code, {"text": "done"}]}]
    assistant = decode(contents=contents).messages[1]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content == (NativeBlock(format="gemini", data=code), TextPart(text="done"))


def test_count_tokens_takes_contents_or_a_whole_request() -> None:
    plain = decode_count_tokens_request(json.dumps({"contents": [HI]}).encode(), model="m")
    whole = {"generateContentRequest": {"model": "models/m", "contents": [HI]}}
    wrapped = decode_count_tokens_request(json.dumps(whole).encode(), model="m")
    assert plain.messages == wrapped.messages == (UserMessage(content=(TextPart(text="hi"),)),)
    assert encode_count_tokens_response(12) == b'{"totalTokens":12}'


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"contents": []}, "contents"),
        ({"contents": [{"role": "wizard", "parts": [{"text": SECRET}]}]}, "contents[0].role"),
        ({"contents": [{"role": "user", "parts": [{}]}]}, "contents[0].parts[0]"),
        ({"contents": [{"parts": [{"text": SECRET, "inlineData": {}}]}]}, "contents[0].parts[0]"),
        ({"contents": [{"parts": [{"text": 5}]}]}, "contents[0].parts[0].text"),
        (
            {"contents": [{"parts": [{"functionCall": {"name": "f"}}]}]},
            "contents[0].parts[0].functionCall",
        ),
        (
            {"contents": [{"parts": [{"functionResponse": {"name": SECRET, "response": {}}}]}]},
            "contents[0].parts[0].functionResponse",
        ),
        ({"generationConfig": {"temperature": 3}}, "generationConfig.temperature"),
        ({"generationConfig": {"maxOutputTokens": 0}}, "generationConfig.maxOutputTokens"),
        ({"generationConfig": {"topK": "many"}}, "generationConfig.topK"),
        (
            {"generationConfig": {"responseSchema": {"type": "OBJECT"}}},
            "generationConfig.responseMimeType",
        ),
        (
            {"generationConfig": {"thinkingConfig": {"thinkingBudget": -2}}},
            "generationConfig.thinkingConfig.thinkingBudget",
        ),
        (
            {
                "tools": [
                    {"functionDeclarations": [{"name": "f", "parameters": {"type": "WIDGET"}}]}
                ]
            },
            "tools[0].functionDeclarations[0].parameters.type",
        ),
        (
            {
                "toolConfig": {
                    "functionCallingConfig": {"mode": "AUTO", "allowedFunctionNames": ["f"]}
                }
            },
            "toolConfig.functionCallingConfig.allowedFunctionNames",
        ),
    ],
)
def test_bad_fields_are_named(fields: dict[str, Any], param: str) -> None:
    assert refused(InvalidRequestError, **fields).param == param


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"generationConfig": {"candidateCount": 2}}, "generationConfig.candidateCount"),
        (
            {"generationConfig": {"responseMimeType": "text/x.enum"}},
            "generationConfig.responseMimeType",
        ),
        ({"contents": [{"parts": [{"hologram": {"data": SECRET}}]}]}, "contents[0].parts[0]"),
        (
            {"contents": [{"parts": [{"fileData": {"fileUri": "gs://v"}, "videoMetadata": {}}]}]},
            "contents[0].parts[0].videoMetadata",
        ),
        ({"toolConfig": {"retrievalConfig": {}}}, "toolConfig.retrievalConfig"),
    ],
)
def test_what_the_ir_cannot_carry_is_refused_by_name(fields: dict[str, Any], param: str) -> None:
    error = refused(NativeFeatureUnsupportedError, **fields)
    assert error.param == param


def test_an_unknown_part_kind_is_named_only_when_it_looks_like_a_name() -> None:
    named = refused(NativeFeatureUnsupportedError, contents=[{"parts": [{"hologram": {}}]}])
    assert "`hologram`" in named.message
    odd = refused(NativeFeatureUnsupportedError, contents=[{"parts": [{SECRET: 1}]}])
    assert "this part kind" in odd.message


def test_not_json_is_refused() -> None:
    with pytest.raises(InvalidRequestError):
        decode_generate_request(b"{nope", model="m", stream=False)
    with pytest.raises(InvalidRequestError):
        decode_generate_request(b"[]", model="m", stream=False)
