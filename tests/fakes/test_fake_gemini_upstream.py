"""The fake Gemini upstream, checked through raw httpx against Google's documented shapes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .gemini_upstream import DEFAULT_TEXT, Behavior, FakeGemini

BODY: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": "Be brief."}]},
    "contents": [{"role": "user", "parts": [{"text": "Say hello to me"}]}],
}
KEY = {"x-goog-api-key": "test-key"}
GENERATE = "/v1beta/models/gemini-test:generateContent"
STREAM = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeGemini) -> FakeGemini:
    server.clear()
    server.default = Behavior()
    server.api_key = None
    return server


@pytest.fixture
def http(fake: FakeGemini) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake.base_url, headers=KEY, timeout=10) as client:
        yield client


def sse_chunks(response: httpx.Response) -> list[dict[str, Any]]:
    """Each ``data:`` frame, checking Google's CRLF framing on the way."""
    raw = response.content
    assert raw.endswith(b"\r\n\r\n")
    frames = raw.split(b"\r\n\r\n")[:-1]
    assert all(frame.startswith(b"data: ") for frame in frames)
    return [json.loads(frame[len(b"data: ") :]) for frame in frames]


def test_generate_content(fake: FakeGemini, http: httpx.Client) -> None:
    response = http.post(GENERATE, json=BODY)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    payload = response.json()
    [candidate] = payload["candidates"]
    assert candidate["content"] == {"parts": [{"text": DEFAULT_TEXT}], "role": "model"}
    assert (candidate["finishReason"], candidate["index"]) == ("STOP", 0)
    usage = payload["usageMetadata"]
    assert (usage["promptTokenCount"], usage["candidatesTokenCount"], usage["totalTokenCount"]) == (
        6,
        4,
        10,
    )
    assert payload["modelVersion"] == "gemini-test"
    assert payload["responseId"]
    [received] = fake.requests
    assert (received.method, received.path) == ("POST", GENERATE)
    assert received.json == BODY
    assert received.headers["x-goog-api-key"] == "test-key"


def test_stream_frames_carry_text_usage_and_one_finish(
    fake: FakeGemini, http: httpx.Client
) -> None:
    fake.enqueue(Behavior(text="one two three four", chunks=2, usage=(9, 4)))

    response = http.post(STREAM, json=BODY)

    assert response.headers["content-type"] == "text/event-stream"
    chunks = sse_chunks(response)
    texts = [chunk["candidates"][0]["content"]["parts"][0]["text"] for chunk in chunks]
    assert texts == ["one two", " three four"]
    finishes = [chunk["candidates"][0].get("finishReason") for chunk in chunks]
    assert finishes == [None, "STOP"]
    assert chunks[-1]["usageMetadata"]["candidatesTokenCount"] == 4
    assert {chunk["responseId"] for chunk in chunks} == {chunks[0]["responseId"]}


def test_stream_without_alt_sse_is_a_json_array(http: httpx.Client) -> None:
    response = http.post("/v1beta/models/m:streamGenerateContent", json=BODY)

    chunks = response.json()
    assert isinstance(chunks, list)
    assert (
        "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks) == DEFAULT_TEXT
    )


def test_parallel_function_calls_with_signature_and_ids(
    fake: FakeGemini, http: httpx.Client
) -> None:
    calls = (("get_weather", '{"city": "Paris"}'), ("get_time", '{"zone": "CET"}'))
    fake.enqueue(Behavior(tool_calls=calls, thought_signature="c2ln", call_ids=True))

    parts = http.post(GENERATE, json=BODY).json()["candidates"][0]["content"]["parts"]

    assert parts == [
        {
            "functionCall": {
                "name": "get_weather",
                "args": {"city": "Paris"},
                "id": "fc-0-get_weather",
            },
            "thoughtSignature": "c2ln",
        },
        {"functionCall": {"name": "get_time", "args": {"zone": "CET"}, "id": "fc-1-get_time"}},
    ]


def test_thought_part_and_thought_tokens(fake: FakeGemini, http: httpx.Client) -> None:
    fake.enqueue(Behavior(thought="Thinking it over", thoughts_tokens=7, thought_signature="c2ln"))

    payload = http.post(GENERATE, json=BODY).json()

    parts = payload["candidates"][0]["content"]["parts"]
    assert parts[0] == {"text": "Thinking it over", "thought": True}
    assert parts[1] == {"text": DEFAULT_TEXT, "thoughtSignature": "c2ln"}
    assert payload["usageMetadata"]["thoughtsTokenCount"] == 7
    assert payload["usageMetadata"]["totalTokenCount"] == 6 + 4 + 7


def test_prompt_block_has_no_candidates(fake: FakeGemini, http: httpx.Client) -> None:
    fake.enqueue(Behavior(block_reason="SAFETY"), Behavior(block_reason="OTHER"))

    whole = http.post(GENERATE, json=BODY).json()
    [chunk] = sse_chunks(http.post(STREAM, json=BODY))

    for payload, reason in ((whole, "SAFETY"), (chunk, "OTHER")):
        assert "candidates" not in payload
        assert payload["promptFeedback"]["blockReason"] == reason


def test_safety_mid_stream(fake: FakeGemini, http: httpx.Client) -> None:
    fake.enqueue(Behavior(text="a b c d", safety_after_chunks=2))

    chunks = sse_chunks(http.post(STREAM, json=BODY))

    assert [c["candidates"][0].get("finishReason") for c in chunks] == [None, None, "SAFETY"]
    assert "content" not in chunks[-1]["candidates"][0]


def test_error_object_in_stream(fake: FakeGemini, http: httpx.Client) -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    fake.enqueue(Behavior(text="a b c", error_in_stream=(1, error)))

    chunks = sse_chunks(http.post(STREAM, json=BODY))

    assert len(chunks) == 2
    assert chunks[-1] == error


@pytest.mark.parametrize(
    ("status", "google_status"),
    [(400, "INVALID_ARGUMENT"), (401, "UNAUTHENTICATED"), (403, "PERMISSION_DENIED"), (404, "NOT_FOUND"),
     (429, "RESOURCE_EXHAUSTED"), (500, "INTERNAL"), (503, "UNAVAILABLE"), (504, "DEADLINE_EXCEEDED")],
)  # fmt: skip
def test_error_statuses_have_google_shape(
    fake: FakeGemini, http: httpx.Client, status: int, google_status: str
) -> None:
    fake.enqueue(Behavior(status=status))

    response = http.post(STREAM, json=BODY)

    assert response.status_code == status
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (status, google_status)
    assert error["message"]
    if status == 429:
        assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"} in error[
            "details"
        ]


def test_keys_are_checked(fake: FakeGemini) -> None:
    fake.api_key = "right-key"
    with httpx.Client(base_url=fake.base_url, timeout=10) as client:
        missing = client.post(GENERATE, json=BODY)
        wrong = client.post(GENERATE, json=BODY, headers={"x-goog-api-key": "wrong"})
        in_query = client.post(f"{GENERATE}?key=right-key", json=BODY)

    assert (missing.status_code, missing.json()["error"]["status"]) == (403, "PERMISSION_DENIED")
    assert wrong.status_code == 400
    assert wrong.json()["error"]["details"][0]["reason"] == "API_KEY_INVALID"
    assert in_query.status_code == 200
    assert fake.count == 1  # refused keys never reach the script


def test_drops_and_malformed(fake: FakeGemini, http: httpx.Client) -> None:
    fake.enqueue(
        Behavior(text="a b c d", drop_after_chunks=2),
        Behavior(drop_before_headers=True),
        Behavior(malformed=True),
        Behavior(malformed=True),
    )
    received: list[bytes] = []
    with (
        pytest.raises(httpx.RemoteProtocolError),
        http.stream("POST", STREAM, json=BODY) as response,
    ):
        received.extend(response.iter_bytes())
    assert b"".join(received).count(b"data: ") == 2
    with pytest.raises(httpx.RemoteProtocolError):
        http.post(GENERATE, json=BODY)
    with pytest.raises(json.JSONDecodeError):
        http.post(GENERATE, json=BODY).json()
    assert b"data: {not json}" in http.post(STREAM, json=BODY).content


def test_unknown_paths_and_models_list(fake: FakeGemini, http: httpx.Client) -> None:
    assert http.post("/v1beta/models/m:embedContent", json={}).status_code == 404
    assert http.post(GENERATE, content=b"not json").status_code == 400
    names = [model["name"] for model in http.get("/v1beta/models").json()["models"]]
    assert "models/gemini-2.5-flash" in names
    assert fake.count == 0
