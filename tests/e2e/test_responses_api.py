"""The Responses API (POST /v1/responses) through a real gw, as the openai SDK sees it:
its errors, a failure in the middle of a stream, retries before the first byte,
structured output reaching each upstream in its own form, the request id the SDK shows,
and what `gw explain` says of a request. (Text, tools and images on every upstream kind
are in test_translation_matrix.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from e2e.gw_process import GwServer
from fakes import anthropic_upstream, gemini_upstream, openai_upstream
from fakes.anthropic_upstream import FakeAnthropic
from fakes.gemini_upstream import FakeGemini
from fakes.openai_upstream import FakeOpenAI

CONFIG = """
providers:
  - {{name: oai, kind: openai_compatible, base_url: "{openai}"}}
  - {{name: gem, kind: gemini, base_url: "{gemini}", api_key: env:GW_TEST_KEY}}
  - {{name: claude, kind: anthropic, base_url: "{anthropic}", api_key: env:GW_TEST_KEY}}
routes:
  - {{name: to-openai, targets: [{{provider: oai, model: gpt-a}}]}}
  - {{name: to-gemini, targets: [{{provider: gem, model: gemini-2.5-flash}}]}}
  - {{name: to-anthropic, targets: [{{provider: claude, model: claude-sonnet-4-5}}]}}
policies:
  - name: quick
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 2, initial_backoff: 10ms}}
"""
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, Any]]:
    with FakeOpenAI() as oai, FakeGemini() as gem, FakeAnthropic() as claude:
        yield {"openai": oai, "gemini": gem, "anthropic": claude}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, Any]) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("responses")
    config = home / "gw.yaml"
    config.write_text(
        CONFIG.format(
            openai=fakes["openai"].base_url,
            gemini=fakes["gemini"].base_url,
            anthropic=fakes["anthropic"].base_url,
        )
    )
    with GwServer(home / "state", config, env={"GW_TEST_KEY": "k-test"}) as server:
        yield server


@pytest.fixture(autouse=True)
def _clear(fakes: dict[str, Any]) -> None:
    for fake in fakes.values():
        fake.clear()


@pytest.fixture
def sdk(gw: GwServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)


def test_the_sdk_shows_gws_request_id_and_explain_takes_the_response_id(
    gw: GwServer, sdk: openai.OpenAI
) -> None:
    raw = sdk.responses.with_raw_response.create(model="to-openai", input="hi")
    answer = raw.parse()
    request_id = raw.headers["x-gw-request-id"]
    assert answer._request_id == request_id
    assert answer.id == "resp_" + request_id.removeprefix("req_")
    trace = gw.wait_for_trace(answer.id)
    assert trace["request_id"] == request_id
    assert trace["endpoint"] == "responses"
    shown = gw.cli("explain", answer.id).stdout
    assert "OpenAI Responses -> IR -> OpenAI chat" in shown


def test_errors_take_openais_shape(sdk: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        sdk.responses.create(model="no-such-route", input="hi")
    assert missing.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad:
        sdk.responses.create(model="to-openai", input=[{"role": "robot", "content": "x"}])  # type: ignore[list-item]
    assert bad.value.code == "invalid_request"
    body: Any = bad.value.body
    assert body["param"] == "input[0].role"


def test_an_upstream_failure_before_the_first_byte_is_retried(
    fakes: dict[str, Any], sdk: openai.OpenAI
) -> None:
    fakes["openai"].enqueue(openai_upstream.Behavior(status=500), openai_upstream.Behavior())
    with sdk.responses.stream(model="to-openai", input="hi") as events:
        final = events.get_final_response()
    assert final.output_text == openai_upstream.DEFAULT_TEXT
    assert fakes["openai"].count == 2


def test_a_failure_mid_stream_ends_with_the_responses_error_events(
    fakes: dict[str, Any], sdk: openai.OpenAI
) -> None:
    fakes["openai"].enqueue(openai_upstream.Behavior(drop_after_chunks=2))
    events = list(sdk.responses.create(model="to-openai", input="hi", stream=True))
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert "response.output_text.delta" in kinds
    assert kinds[-2:] == ["error", "response.failed"]
    assert "response.completed" not in kinds
    failed = events[-1]
    assert failed.type == "response.failed"
    assert failed.response.status == "failed"


def test_structured_output_reaches_each_upstream_in_its_own_form(
    fakes: dict[str, Any], sdk: openai.OpenAI
) -> None:
    text: Any = {
        "format": {"type": "json_schema", "name": "place", "schema": SCHEMA, "strict": True}
    }
    fakes["openai"].enqueue(openai_upstream.Behavior(text='{"city": "Paris"}'))
    answer = sdk.responses.create(model="to-openai", input="where?", text=text)
    assert answer.output_text == '{"city": "Paris"}'
    sent = fakes["openai"].requests[-1].json["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"] == SCHEMA

    fakes["gemini"].enqueue(gemini_upstream.Behavior(text='{"city": "Paris"}'))
    sdk.responses.create(model="to-gemini", input="where?", text=text)
    config = fakes["gemini"].requests[-1].json["generationConfig"]
    assert config["responseMimeType"] == "application/json"

    fakes["anthropic"].enqueue(anthropic_upstream.Behavior(text='{"city": "Paris"}'))
    answer = sdk.responses.create(model="to-anthropic", input="where?", text=text)
    assert "Paris" in answer.output_text


def test_settings_are_echoed_and_kept_keys_are_noted_for_another_format(
    gw: GwServer, fakes: dict[str, Any], sdk: openai.OpenAI
) -> None:
    raw = sdk.responses.with_raw_response.create(
        model="to-anthropic",
        input="hi",
        instructions="be brief",
        metadata={"team": "a"},
        store=False,
        # web_search runs on OpenAI's side; offered beside a function, it is optional.
        tools=[
            {"type": "web_search"},
            {"type": "function", "name": "f", "parameters": SCHEMA, "strict": False},
        ],
        max_output_tokens=300,
    )
    answer = raw.parse()
    assert answer.metadata == {"team": "a"}
    assert answer.instructions == "be brief"
    assert answer.max_output_tokens == 300
    sent = fakes["anthropic"].requests[-1].json
    assert sent["system"] == "be brief"
    assert [tool["name"] for tool in sent["tools"]] == ["f"]
    trace = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    notes = trace["attempts"][0]["translation_notes"]
    assert any("metadata" in note and "not sent" in note for note in notes), notes
    assert any("web_search" in note for note in notes), notes


def test_only_built_in_tools_need_a_responses_upstream(sdk: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        sdk.responses.create(model="to-openai", input="news?", tools=[{"type": "web_search"}])
    assert refused.value.code == "native_feature_unsupported"
    assert "web_search" in refused.value.message
