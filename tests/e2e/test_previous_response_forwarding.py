"""previous_response_id through a real gw, with the openai SDK: forwarded to the
``kind: openai_responses`` upstream as that upstream's own id, on the same account that
made the response (the provider rotates accounts round-robin, so an unpinned request would
go to the other), streamed or not; refused on a route without that provider."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import FakeOpenAI
from fakes.responses_upstream import FakeResponses

CONFIG = """
providers:
  - name: native
    kind: openai_responses
    base_url: "{native}"
    account_selection: round_robin
    accounts: [{{name: one, api_key: env:GW_KEY_ONE}}, {{name: two, api_key: env:GW_KEY_TWO}}]
  - {{name: oai, kind: openai_compatible, base_url: "{openai}"}}
routes:
  - name: mixed
    targets: [{{provider: native, model: gpt-5-mini, priority: 1}}, {{provider: oai, model: gpt-a, priority: 2}}]
  - {{name: chat-only, targets: [{{provider: oai, model: gpt-a}}]}}
"""
KEYS = {"GW_KEY_ONE": "sk-account-one-0123", "GW_KEY_TWO": "sk-account-two-4567"}


@pytest.fixture(scope="module")
def native() -> Iterator[FakeResponses]:
    with FakeResponses() as fake:
        yield fake


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, native: FakeResponses) -> Iterator[GwServer]:
    home: Path = tmp_path_factory.mktemp("previous")
    with FakeOpenAI() as oai:
        config = home / "gw.yaml"
        config.write_text(CONFIG.format(native=native.base_url, openai=oai.base_url))
        with GwServer(home / "state", config, env=KEYS) as server:
            yield server


def account_of(native: FakeResponses, index: int) -> str:
    sent = native.responses_requests[index].headers["authorization"]
    return {f"Bearer {key}": name for name, key in zip(("one", "two"), KEYS.values(), strict=True)}[
        sent
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_the_upstreams_id_goes_to_the_account_that_made_the_response(
    gw: GwServer, native: FakeResponses, stream: bool
) -> None:
    native.clear()
    client = openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)
    first = client.responses.create(model="mixed", input="remember 7")
    assert first.id.startswith("resp_")
    upstream_id = gw.wait_for_trace(first.id)["attempts"][-1]["upstream_response_id"]
    assert upstream_id.startswith("resp_fake")
    assert upstream_id != first.id  # the client holds gw's id, never the upstream's
    if stream:
        with client.responses.stream(
            model="mixed", input="what was it?", previous_response_id=first.id
        ) as events:
            second = events.get_final_response()
    else:
        second = client.responses.create(
            model="mixed", input="what was it?", previous_response_id=first.id
        )
    assert second.previous_response_id == first.id  # echoed as the client sent it
    sent = native.responses_requests
    assert len(sent) == 2
    assert sent[1].json["previous_response_id"] == upstream_id
    assert account_of(native, 1) == account_of(native, 0)
    trace = gw.wait_for_trace(second.id)
    assert any("previous_response_id" in note for note in trace["decision"]["notes"])


def test_a_route_without_the_provider_that_holds_it_is_refused(
    gw: GwServer, native: FakeResponses
) -> None:
    client = openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)
    first = client.responses.create(model="mixed", input="hi")
    gw.wait_for_trace(first.id)
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="chat-only", input="and?", previous_response_id=first.id)
    assert (refused.value.code, refused.value.param) == ("invalid_request", "previous_response_id")
    assert "native" in refused.value.message
