"""Output limits through a real gw to a fake Anthropic upstream (DESIGN.md invariant 7).

Anthropic requires ``max_tokens``: a request without one gets gw's default, which a
policy's ``limits.max_output_tokens`` and the catalog's ``max_output_tokens`` lower. A
client's larger value is clamped to either ceiling, and ``gw explain`` says what was sent.
"""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from e2e.gw_process import GwServer
from fakes.anthropic_upstream import Behavior, FakeAnthropic

CONFIG = """
providers:
  - {{name: claude, kind: anthropic, base_url: "{url}", api_key: env:GW_TEST_KEY}}
models:
  - {{provider: claude, model: claude-small, max_output_tokens: 50}}
routes:
  - {{name: capped, targets: [{{provider: claude, model: claude-a}}]}}
  - {{name: small, targets: [{{provider: claude, model: claude-small}}]}}
  - {{name: open, targets: [{{provider: claude, model: claude-a}}]}}
policies:
  - {{name: cap, match: {{routes: [capped]}}, limits: {{max_output_tokens: 100}}}}
"""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as upstream:
        yield upstream


@pytest.fixture(scope="module")
def gw(fake: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("output-limits")
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(url=fake.base_url))
    with GwServer(home / "state", config, env={"GW_TEST_KEY": "sk-ant-test"}) as server:
        yield server


def ask(gw: GwServer, route: str, max_tokens: int | None, *, stream: bool = False) -> str:
    sdk = openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)
    extra = {} if max_tokens is None else {"max_tokens": max_tokens}
    messages = [{"role": "user", "content": "hello"}]
    if stream:
        with sdk.chat.completions.with_streaming_response.create(
            model=route, messages=messages, stream=True, **extra
        ) as response:
            for _ in response.iter_lines():
                pass
            return response.headers["x-gw-request-id"]
    raw = sdk.chat.completions.with_raw_response.create(model=route, messages=messages, **extra)
    return raw.headers["x-gw-request-id"]


def sent_max_tokens(fake: FakeAnthropic) -> int:
    return int(fake.requests[-1].json["max_tokens"])


def attempt_notes(gw: GwServer, request_id: str) -> list[str]:
    trace = gw.wait_for_trace(request_id)
    return list(trace["attempts"][-1]["limit_notes"])


@pytest.mark.parametrize("stream", [False, True])
def test_without_max_tokens_anthropic_gets_the_default_under_the_policy_limit(
    gw: GwServer, fake: FakeAnthropic, stream: bool
) -> None:
    request_id = ask(gw, "capped", None, stream=stream)
    assert sent_max_tokens(fake) == 100
    assert attempt_notes(gw, request_id) == ["max_tokens 100 added: Anthropic requires one"]


def test_without_max_tokens_anthropic_gets_the_default_under_the_catalog_limit(
    gw: GwServer, fake: FakeAnthropic
) -> None:
    ask(gw, "small", None)
    assert sent_max_tokens(fake) == 50


def test_without_any_ceiling_the_default_is_4096(gw: GwServer, fake: FakeAnthropic) -> None:
    ask(gw, "open", None)
    assert sent_max_tokens(fake) == 4096


def test_a_larger_request_is_clamped_to_the_models_ceiling_and_says_so(
    gw: GwServer, fake: FakeAnthropic
) -> None:
    request_id = ask(gw, "small", 5000)
    assert sent_max_tokens(fake) == 50
    assert attempt_notes(gw, request_id) == [
        "max_tokens 5000 clamped to claude/claude-small's max_output_tokens 50"
    ]


def test_a_smaller_request_goes_as_asked(gw: GwServer, fake: FakeAnthropic) -> None:
    request_id = ask(gw, "capped", 30)
    assert sent_max_tokens(fake) == 30
    assert attempt_notes(gw, request_id) == []


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_over_the_policy_ceiling_is_clamped_with_a_warning_header(
    gw: GwServer, fake: FakeAnthropic, stream: bool
) -> None:
    sdk = openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)
    messages = [{"role": "user", "content": "hello"}]
    if stream:
        with sdk.chat.completions.with_streaming_response.create(
            model="capped", messages=messages, max_tokens=500, stream=True
        ) as response:
            headers = response.headers
            for _ in response.iter_lines():
                pass
    else:
        headers = sdk.chat.completions.with_raw_response.create(
            model="capped", messages=messages, max_tokens=500
        ).headers
    assert sent_max_tokens(fake) == 100
    warning = "max_tokens 500 clamped to policy ceiling 100"
    assert headers["x-gw-warning"] == warning
    assert gw.wait_for_trace(headers["x-gw-request-id"])["decision"]["warnings"] == [warning]


def test_each_attempt_has_its_own_notes_through_a_retry(gw: GwServer, fake: FakeAnthropic) -> None:
    fake.enqueue(Behavior(status=500))  # the first attempt fails; the retry answers
    request_id = ask(gw, "capped", None)
    attempts = gw.wait_for_trace(request_id)["attempts"]
    assert [a["outcome"] for a in attempts] == ["retried", "answered"]
    for attempt in attempts:
        assert attempt["limit_notes"] == ["max_tokens 100 added: Anthropic requires one"]
