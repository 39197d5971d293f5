"""Gemini clients (``POST /v1beta/models/{model}:generateContent``): the fields the table
lists. The model and the stream flag come from the path (gw/server/inference/gemini_api.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance import concepts as c
from conformance import conversation as talk
from conformance import markers as m
from conformance.case import Case, Client
from gw.codecs.gemini.client_request import decode_generate_request
from gw.ir import ChatRequest

HI: dict[str, Any] = {"role": "user", "parts": [{"text": "hi"}]}
FUNCTIONS = {
    "functionDeclarations": [
        {"name": m.TOOL, "description": "Weather", "parametersJsonSchema": m.PARAMETERS}
    ]
}
CALL = {"role": "model", "parts": [{"functionCall": {"name": m.TOOL, "args": {"city": "Paris"}}}]}
FILE_URI = "https://generativelanguage.googleapis.com/v1beta/files/paper-7f3"
GEMINI_SCHEMA = {
    "type": "OBJECT",
    "properties": {"answer": {"type": "STRING"}},
    "required": ["answer"],
}


def _decode(body: bytes, headers: Mapping[str, str], stream: bool) -> ChatRequest:
    return decode_generate_request(body, model="m", stream=stream)


def _say(*parts: dict[str, Any]) -> dict[str, Any]:
    """A body whose only turn is a user turn of ``parts``."""
    return {"contents": [{"role": "user", "parts": list(parts)}]}


def _answered(response: dict[str, Any]) -> dict[str, Any]:
    result = {
        "role": "user",
        "parts": [{"functionResponse": {"name": m.TOOL, "response": response}}],
    }
    return {"tools": [FUNCTIONS], "contents": [HI, CALL, result]}


def _earlier(*parts: dict[str, Any]) -> dict[str, Any]:
    """A conversation whose model turn held ``parts`` before its answer."""
    turn = {"role": "model", "parts": [*parts, {"text": "ok"}]}
    return {"contents": [HI, turn, {"role": "user", "parts": [{"text": "and now?"}]}]}


def _config(**config: Any) -> dict[str, Any]:
    return {"generationConfig": config}


def _calling(**config: Any) -> dict[str, Any]:
    return {"tools": [FUNCTIONS], "toolConfig": {"functionCallingConfig": config}}


def _thinking(**config: Any) -> dict[str, Any]:
    return _config(thinkingConfig=config)


CASES = (
    Case(
        "`contents[].parts[]: text`",
        _say({"text": m.USER_TEXT}),
        talk.said(m.USER_TEXT, role="user"),
    ),
    Case(
        "`contents[].parts[]: text` (model turn)",
        {"contents": [HI, {"role": "model", "parts": [{"text": m.ASSISTANT_TEXT}]}, HI]},
        talk.said(m.ASSISTANT_TEXT, role="assistant"),
    ),
    Case(
        "`systemInstruction`",
        {"systemInstruction": {"parts": [{"text": m.SYSTEM_TEXT}]}},
        talk.SYSTEM,
    ),
    Case(
        "`inlineData` (image)",
        _say(
            {"text": "what is it"}, {"inlineData": {"mimeType": "image/png", "data": m.IMAGE_DATA}}
        ),
        talk.IMAGE_INLINE,
    ),
    Case(
        "`inlineData` (PDF)",
        _say(
            {"text": "summarise"},
            {"inlineData": {"mimeType": "application/pdf", "data": m.PDF_DATA}},
        ),
        talk.FILE_INLINE,
    ),
    Case(
        "`fileData` (Files API URI)",
        _say(
            {"text": "summarise"},
            {"fileData": {"mimeType": "application/pdf", "fileUri": FILE_URI}},
        ),
        talk.file_by_url(FILE_URI),
    ),
    Case("`functionCall`", _answered({"output": m.RESULT_TEXT}), talk.TOOL_CALL),
    Case("`functionResponse`", _answered({"output": m.RESULT_TEXT}), talk.TOOL_RESULT),
    Case(
        "`functionResponse` (`error`)", _answered({"error": m.RESULT_TEXT}), talk.TOOL_RESULT_ERROR
    ),
    Case(
        "`thought` parts (signed)",
        _earlier({"text": "hmm", "thought": True, "thoughtSignature": m.SIGNATURE}),
        talk.THINKING_SIGNED,
    ),
    Case(
        "`thought` parts (unsigned)",
        _earlier({"text": m.THOUGHT_TEXT, "thought": True}),
        talk.THOUGHT_UNSIGNED,
    ),
    Case(
        "`thoughtSignature` on a `functionCall`",
        {
            "tools": [FUNCTIONS],
            "contents": [
                HI,
                {
                    "role": "model",
                    "parts": [
                        {
                            "functionCall": {"name": m.TOOL, "args": {}},
                            "thoughtSignature": m.SIGNATURE,
                        }
                    ],
                },
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"name": m.TOOL, "response": {"output": "ok"}}}],
                },
            ],
        },
        talk.THINKING_SIGNED,
    ),
    Case(
        "`executableCode`, `codeExecutionResult`",
        _earlier(
            {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
        ),
        talk.native_block("gemini", "executableCode"),
    ),
    Case("`tools[].functionDeclarations`", {"tools": [FUNCTIONS]}, c.FUNCTION_TOOL),
    Case(
        "`tools[].googleSearch` (alone)",
        {"tools": [{"googleSearch": {}}]},
        c.native_tool("gemini", "googleSearch"),
    ),
    Case(
        "`tools[].googleSearch` (beside functions)",
        {"tools": [FUNCTIONS, {"googleSearch": {}}]},
        c.native_tool("gemini", "googleSearch"),
    ),
    Case(
        "`tools[].codeExecution` (alone)",
        {"tools": [{"codeExecution": {}}]},
        c.native_tool("gemini", "codeExecution"),
    ),
    Case("`toolConfig` mode `AUTO`", _calling(mode="AUTO"), c.CHOICE_AUTO),
    Case("`toolConfig` mode `ANY`", _calling(mode="ANY"), c.CHOICE_REQUIRED),
    Case(
        "`toolConfig` mode `ANY`, one `allowedFunctionNames`",
        _calling(mode="ANY", allowedFunctionNames=[m.TOOL]),
        c.CHOICE_NAMED,
    ),
    Case("`toolConfig` mode `NONE`", _calling(mode="NONE"), c.CHOICE_NONE),
    Case("`toolConfig` mode `VALIDATED`", _calling(mode="VALIDATED"), c.CHOICE_VALIDATED),
    Case("`generationConfig.temperature`", _config(temperature=0.37), c.TEMPERATURE),
    Case("`generationConfig.topP`", _config(topP=0.73), c.TOP_P),
    Case("`generationConfig.topK`", _config(topK=7), c.TOP_K),
    Case(
        "`generationConfig.maxOutputTokens`",
        _config(maxOutputTokens=c.MAX_TOKENS_VALUE),
        c.MAX_TOKENS,
    ),
    Case("`generationConfig.stopSequences`", _config(stopSequences=[m.STOP]), c.STOP_SEQUENCES),
    Case("`generationConfig.seed`", _config(seed=4242), c.SEED),
    Case("`generationConfig.presencePenalty`", _config(presencePenalty=0.35), c.PRESENCE_PENALTY),
    Case(
        "`generationConfig.frequencyPenalty`", _config(frequencyPenalty=0.25), c.FREQUENCY_PENALTY
    ),
    Case(
        "`generationConfig.candidateCount: 2`",
        _config(candidateCount=2),
        c.unmodelled("candidateCount"),
    ),
    Case(
        "`generationConfig.responseMimeType: application/json`",
        _config(responseMimeType="application/json"),
        c.JSON_OBJECT,
    ),
    Case(
        "`generationConfig.responseSchema`",
        _config(responseMimeType="application/json", responseSchema=GEMINI_SCHEMA),
        c.JSON_SCHEMA,
    ),
    Case(
        "`generationConfig.responseJsonSchema`",
        _config(responseMimeType="application/json", responseJsonSchema=m.SCHEMA),
        c.JSON_SCHEMA,
    ),
    Case("`thinkingConfig.thinkingBudget`", _thinking(thinkingBudget=2048), c.REASONING),
    Case(
        "`thinkingConfig.thinkingBudget: -1` (dynamic)", _thinking(thinkingBudget=-1), c.REASONING
    ),
    Case("`thinkingConfig.thinkingBudget: 0` (off)", _thinking(thinkingBudget=0), c.REASONING_OFF),
    Case("`thinkingConfig.thinkingLevel`", _thinking(thinkingLevel="HIGH"), c.REASONING),
    Case("`thinkingConfig.includeThoughts`", _thinking(includeThoughts=True), c.INCLUDE_THOUGHTS),
    Case(
        "`generationConfig.responseModalities`",
        _config(responseModalities=["TEXT"]),
        c.passthrough("gemini", "generationConfig.responseModalities"),
    ),
    Case(
        "`safetySettings`",
        {"safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]},
        c.passthrough("gemini", "safetySettings"),
    ),
    Case(
        "`cachedContent`",
        {"cachedContent": "cachedContents/7f3"},
        c.passthrough("gemini", "cachedContent"),
    ),
    Case("`:streamGenerateContent` (path)", {}, c.STREAM, stream=True),
)

CLIENT = Client(
    format="gemini",
    title="Gemini clients (`POST /v1beta/models/{model}:generateContent`)",
    base={"contents": [HI]},
    decode=_decode,
    cases=CASES,
)
