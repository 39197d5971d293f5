"""IR -> Gemini request JSON -> IR again, for every request the format can express.

``read_request`` below is a test-only decoder written from Gemini's documented request
shape. Ids of tool calls do not travel (Gemini pairs results with calls by name and
order), so the generated conversations number them ``call_<n>`` in order, as it does.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gw.codecs.gemini.upstream_request import SKIP_SIGNATURE, encode_upstream_request
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ContentPart,
    ImagePart,
    Message,
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

JSONObject = dict[str, Any]
MODES = {"AUTO": "auto", "NONE": "none", "ANY": "required"}

# --- the test-only decoder -------------------------------------------------------------------


def read_request(body: JSONObject) -> ChatRequest:
    messages: list[Message] = []
    if "systemInstruction" in body:
        parts = body["systemInstruction"]["parts"]
        messages.append(SystemMessage(content=tuple(TextPart(text=p["text"]) for p in parts)))
    calls: list[ToolCall] = []
    answered: set[str] = set()
    for content in body["contents"]:
        parts = content["parts"]
        if content["role"] == "model":
            messages.append(_model_turn(parts, calls))
        elif all("functionResponse" in part for part in parts):
            for part in parts:
                messages.append(_result(part["functionResponse"], calls, answered))
        else:
            messages.append(UserMessage(content=tuple(_user_part(part) for part in parts)))
    config = body["generationConfig"]
    assert config.pop("candidateCount") == 1
    return ChatRequest(
        model="m",
        messages=tuple(messages),
        tools=tuple(_tool(d) for t in body.get("tools", ()) for d in t["functionDeclarations"]),
        tool_choice=_choice(body["toolConfig"]["functionCallingConfig"])
        if "toolConfig" in body
        else None,
        sampling=Sampling(
            temperature=config.get("temperature"),
            top_p=config.get("topP"),
            top_k=config.get("topK"),
            presence_penalty=config.get("presencePenalty"),
            frequency_penalty=config.get("frequencyPenalty"),
            seed=config.get("seed"),
        ),
        stop=tuple(config.get("stopSequences", ())),
        max_tokens=config.get("maxOutputTokens"),
        response_format=_format(config),
        reasoning=_reasoning(config.get("thinkingConfig")),
    )


def _user_part(part: JSONObject) -> ContentPart:
    if "inlineData" in part:
        return ImagePart(data=part["inlineData"]["data"], media_type=part["inlineData"]["mimeType"])
    return TextPart(text=part["text"])


def _model_turn(parts: list[JSONObject], calls: list[ToolCall]) -> AssistantMessage:
    content: list[TextPart | ThinkingPart] = []
    texts: list[TextPart | ThinkingPart] = []
    turn_calls: list[ToolCall] = []
    for part in parts:
        signature = part.get("thoughtSignature")
        if part.get("thought"):
            content.append(ThinkingPart(text=part["text"], signature=signature))
            continue
        if signature and signature != SKIP_SIGNATURE:
            content.append(ThinkingPart(signature=signature))
        if "functionCall" in part:
            call = part["functionCall"]
            arguments = json.dumps(call["args"], separators=(",", ":"), ensure_ascii=False)
            turn_calls.append(
                ToolCall(id=f"call_{len(calls)}", name=call["name"], arguments=arguments)
            )
            calls.append(turn_calls[-1])
        else:
            texts.append(TextPart(text=part["text"]))
    return AssistantMessage(content=(*content, *texts), tool_calls=tuple(turn_calls))


def _result(response: JSONObject, calls: list[ToolCall], answered: set[str]) -> ToolMessage:
    call = next(c for c in calls if c.name == response["name"] and c.id not in answered)
    answered.add(call.id)
    value = response["response"]
    is_error = "error" in value
    text = value["error"] if is_error else value["output"]
    return ToolMessage(tool_call_id=call.id, content=(TextPart(text=text),), is_error=is_error)


def _tool(declaration: JSONObject) -> ToolDefinition:
    return ToolDefinition(
        name=declaration["name"],
        description=declaration.get("description"),
        parameters=declaration.get("parameters"),
    )


def _choice(config: JSONObject) -> ToolChoice:
    names = config.get("allowedFunctionNames")
    if names:
        return ToolChoice(mode="tool", name=names[0])
    return ToolChoice(mode=MODES[config["mode"]])  # type: ignore[arg-type]


def _format(config: JSONObject) -> ResponseFormat | None:
    if config.get("responseMimeType") != "application/json":
        return None
    if "responseSchema" in config:
        return ResponseFormat(type="json_schema", json_schema=config["responseSchema"])
    return ResponseFormat(type="json_object")


def _reasoning(config: JSONObject | None) -> Reasoning | None:
    if config is None:
        return None
    return Reasoning(budget_tokens=config.get("thinkingBudget"))


# --- requests Gemini can express ---------------------------------------------------------------

texts = st.text(max_size=20)
words = texts.filter(bool)  # Gemini refuses empty text parts: gw drops them (tested apart)
names = st.sampled_from(["get_weather", "lookup", "send_mail"])
signatures = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789+/", min_size=4, max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
images = st.builds(
    ImagePart,
    data=st.binary(min_size=1, max_size=12).map(lambda raw: base64.b64encode(raw).decode()),
    media_type=st.sampled_from(["image/png", "image/jpeg", "image/webp"]),
)
user_messages = st.builds(
    UserMessage,
    content=st.lists(st.builds(TextPart, text=words) | images, min_size=1, max_size=3).map(tuple),
)
schemas = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(
            st.sampled_from(["city", "id", "n"]),
            st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean"])}),
            min_size=1,
        ),
    }
)


@st.composite
def assistant_turns(draw: st.DrawFn, counter: list[int]) -> list[Message]:
    """One model turn, followed by a result for each call it made."""
    thoughts = draw(
        st.lists(st.builds(ThinkingPart, text=texts.filter(bool), signature=signatures), max_size=2)
    )
    said = draw(st.lists(st.builds(TextPart, text=words), max_size=2))
    calls = []
    for _ in range(draw(st.integers(0, 2))):
        arguments = json.dumps(
            draw(st.dictionaries(texts, json_values, max_size=3)),
            separators=(",", ":"),
            ensure_ascii=False,
        )
        calls.append(ToolCall(id=f"call_{counter[0]}", name=draw(names), arguments=arguments))
        counter[0] += 1
    if not (said or calls):
        said = [TextPart(text=draw(words))]
    # A signature without text rides on the first call, or on the last text part.
    loose = [ThinkingPart(signature=draw(signatures))] if draw(st.booleans()) else []
    turn: list[Message] = [
        AssistantMessage(content=(*thoughts, *loose, *said), tool_calls=tuple(calls))
    ]
    for call in calls:
        text = draw(texts.filter(lambda t: not t.lstrip().startswith("{")))
        turn.append(
            ToolMessage(
                tool_call_id=call.id, content=(TextPart(text=text),), is_error=draw(st.booleans())
            )
        )
    return turn


@st.composite
def requests(draw: st.DrawFn) -> ChatRequest:
    counter = [0]
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(
            SystemMessage(
                content=tuple(
                    draw(st.lists(st.builds(TextPart, text=words), min_size=1, max_size=2))
                )
            )
        )
    for _ in range(draw(st.integers(1, 4))):
        messages.extend(draw(user_messages.map(lambda m: [m]) | assistant_turns(counter)))
    tools = draw(
        st.lists(
            st.builds(
                ToolDefinition,
                name=names,
                description=st.none() | texts,
                parameters=st.none() | schemas,
            ),
            max_size=2,
        )
    )
    choice = draw(
        st.none()
        | st.builds(ToolChoice, mode=st.sampled_from(["auto", "none", "required"]))
        | names.map(lambda n: ToolChoice(mode="tool", name=n))
    )
    floats = st.none() | st.floats(0, 2, allow_nan=False)
    return ChatRequest(
        model="m",
        messages=tuple(messages),
        tools=tuple(tools),
        tool_choice=choice,
        sampling=Sampling(
            temperature=draw(floats),
            top_p=draw(floats),
            top_k=draw(st.none() | st.integers(1, 100)),
            presence_penalty=draw(floats),
            frequency_penalty=draw(floats),
            seed=draw(st.none() | st.integers(0, 2**31)),
        ),
        stop=tuple(draw(st.lists(texts.filter(bool), max_size=3))),
        max_tokens=draw(st.none() | st.integers(1, 65536)),
        response_format=draw(
            st.none()
            | st.just(ResponseFormat(type="json_object"))
            | schemas.map(lambda s: ResponseFormat(type="json_schema", json_schema=s))
        ),
        reasoning=draw(
            st.none()
            # An effort goes out as a budget (BUDGET_BY_EFFORT): not expressible as itself.
            | st.builds(Reasoning, budget_tokens=st.integers(0, 24576))
        ),
    )


@settings(max_examples=150, deadline=None)
@given(requests())
def test_every_expressible_request_survives_the_round_trip(request: ChatRequest) -> None:
    body, notes = encode_upstream_request(request)

    assert notes == ()
    assert read_request(json.loads(body)) == request
