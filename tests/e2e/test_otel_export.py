"""OpenTelemetry export through a live gw (``telemetry.otlp``): requests sent with the OpenAI
SDK arrive at a fake OTLP/HTTP collector on loopback as GenAI spans (a request span and a
child per upstream attempt), with the configured headers, and without any prompt or error
text. Start-up refuses ``enabled`` without an endpoint."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import openai
import pytest

from e2e.gw_process import GwServer, run_cli
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI
from fakes.otlp_collector import CollectedSpan, FakeCollector

PROMPT = "a private question about the quartz harbour accounts"
UPSTREAM_ERROR = f"primary cannot answer '{PROMPT}' right now"
WAIT_S = 30.0  # spans leave in batches (every 5 s by default): a generous bound
SERVER, CLIENT = 2, 3  # OTLP span kinds
ERROR = 2  # OTLP status code
TOKEN = "tok-otel-e2e"  # the collector's credential, from gw's environment

CONFIG = """
health: {{degraded_after: 1000, unhealthy_after: 1000, error_rate: 1.0, lock_accounts: false}}
telemetry:
  request_log: "off"
  otlp:
    enabled: true
    endpoint: "{collector}"
    headers: {{x-collector-token: 'env:GW_E2E_OTLP_TOKEN'}}  # resolved at start
    service_name: gw-e2e
providers:
  - {{name: primary, kind: openai_compatible, base_url: "{primary}"}}
  - {{name: mock, kind: mock}}
routes:
  - name: chat
    targets:
      - {{provider: primary, model: gpt-a, priority: 1}}
      - {{provider: mock, model: mock-1, priority: 2}}
  - name: solo
    targets:
      - {{provider: primary, model: gpt-a}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
"""


def wait_for(
    collector: FakeCollector, found: Callable[[list[CollectedSpan]], bool]
) -> list[CollectedSpan]:
    """The collector's spans, once ``found`` holds for them."""

    def arrived() -> list[CollectedSpan] | None:
        spans = collector.spans()
        return spans if found(spans) else None

    return wait_until(
        arrived, lambda: f"the spans; got {[s.name for s in collector.spans()]}", WAIT_S
    )


def request_span(spans: list[CollectedSpan], request_id: str) -> CollectedSpan:
    (span,) = [
        s for s in spans if s.kind == SERVER and s.attributes.get("gw.request_id") == request_id
    ]
    return span


def children(spans: list[CollectedSpan], parent: CollectedSpan) -> list[CollectedSpan]:
    found = [s for s in spans if s.parent_span_id == parent.span_id]
    return sorted(found, key=lambda s: s.start_ns)


def has_request(request_id: str) -> Callable[[list[CollectedSpan]], bool]:
    return lambda spans: any(s.attributes.get("gw.request_id") == request_id for s in spans)


def test_requests_are_exported_as_genai_spans_without_content(tmp_path: Path) -> None:
    with FakeCollector() as collector, FakeOpenAI() as primary:
        primary.default = Behavior(
            status=500,
            error_body={
                "error": {
                    "message": UPSTREAM_ERROR,
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            },
        )
        config = tmp_path / "gw.yaml"
        config.write_text(CONFIG.format(collector=collector.url, primary=primary.base_url))
        with GwServer(tmp_path / "state", config, env={"GW_E2E_OTLP_TOKEN": TOKEN}) as gw:
            client = openai.OpenAI(base_url=gw.base_url, api_key="sk-unused", max_retries=0)
            with client.chat.completions.with_streaming_response.create(
                model="chat", messages=[{"role": "user", "content": PROMPT}], stream=True
            ) as streamed:
                assert streamed.text()
                stream_id = streamed.headers["x-gw-request-id"]
            with pytest.raises(openai.APIStatusError) as failed:
                client.chat.completions.create(
                    model="solo", messages=[{"role": "user", "content": PROMPT}]
                )
            assert failed.value.status_code == 502
            failed_id = failed.value.response.headers["x-gw-request-id"]

            spans = wait_for(
                collector, lambda s: has_request(stream_id)(s) and has_request(failed_id)(s)
            )

            with gw.client() as http:  # the exporter's queue, beside the others
                metrics = http.get("/metrics").text
            assert 'gw_telemetry_queue_depth{queue="otlp"}' in metrics

            # Sent before gw stops, and exported by the flush at shutdown.
            last = client.chat.completions.with_raw_response.create(
                model="mock/mock-1", messages=[{"role": "user", "content": PROMPT}]
            )
            last_id = last.headers["x-gw-request-id"]
        assert gw.process is not None
        assert gw.process.returncode == 0, gw.log()
        spans = wait_for(collector, has_request(last_id))

    # The stream: a SERVER span, and a CLIENT child for each attempt (fallback included).
    stream = request_span(spans, stream_id)
    assert stream.name == "chat chat"
    assert stream.resource["service.name"] == "gw-e2e"
    assert stream.parent_span_id == b""
    assert stream.status_code != ERROR
    assert stream.end_ns > stream.start_ns
    attributes = stream.attributes
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.request.model"] == "chat"
    assert attributes["gen_ai.response.model"] == "mock-1"
    assert attributes["gen_ai.provider.name"] == "mock"
    assert attributes["gen_ai.request.stream"] is True
    assert attributes["gen_ai.usage.input_tokens"] > 0
    assert attributes["gen_ai.usage.output_tokens"] > 0
    assert attributes["http.response.status_code"] == 200
    assert attributes["gw.route"] == "chat"
    assert attributes["gw.revision"] >= 1
    assert attributes["gw.attempts"] == 2
    first, second = children(spans, stream)
    assert (first.name, first.kind, second.name, second.kind) == (
        "chat gpt-a",
        CLIENT,
        "chat mock-1",
        CLIENT,
    )
    assert first.trace_id == second.trace_id == stream.trace_id
    assert stream.start_ns <= first.start_ns < second.start_ns <= stream.end_ns
    assert first.status_code == ERROR
    assert first.status_message == "upstream_error"
    assert first.attributes["error.type"] == "upstream_error"
    assert first.attributes["http.response.status_code"] == 500
    assert first.attributes["gw.attempt.outcome"] == "fell_back"
    assert first.attributes["server.address"] == "127.0.0.1"
    assert first.attributes["server.port"] == primary.port
    assert second.status_code != ERROR
    assert second.attributes["gw.attempt.outcome"] == "answered"
    assert second.attributes["gen_ai.response.model"] == "mock-1"

    # The failure: ERROR, told by its code.
    failure = request_span(spans, failed_id)
    assert failure.name == "chat solo"
    assert failure.status_code == ERROR
    assert failure.attributes["error.type"] == "upstream_error"
    assert failure.attributes["http.response.status_code"] == 502
    (attempt,) = children(spans, failure)
    assert attempt.attributes["gw.attempt.outcome"] == "failed"

    assert request_span(spans, last_id).name == "chat mock/mock-1"

    exports = collector.received()
    assert all(e.headers.get("x-collector-token") == TOKEN for e in exports)
    assert all(e.headers.get("content-type") == "application/x-protobuf" for e in exports)
    wire = b"".join(e.body for e in exports)
    assert stream_id.encode() in wire
    for private in (PROMPT, "quartz harbour", UPSTREAM_ERROR):
        assert private.encode() not in wire, f"{private!r} was exported"


def test_enabled_without_an_endpoint_refuses_to_start(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text("telemetry:\n  otlp: {enabled: true}\n")
    done = run_cli(
        "serve",
        "--port",
        "0",
        "--state-dir",
        str(tmp_path / "state"),
        "--config",
        str(config),
        check=False,
    )
    assert done.returncode != 0
    assert "telemetry.otlp.endpoint" in done.stderr
    assert not (tmp_path / "state" / "server.json").exists()


# `gw serve` in an interpreter where no opentelemetry module can be found, as in the zipapp.
WITHOUT_OTEL = """
import sys

class NoOtel:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, NoOtel())
from gw.cli.main import app
app(sys.argv[1:])
"""


def test_enabled_without_the_extra_refuses_to_start_and_says_how(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text("telemetry:\n  otlp: {enabled: true, endpoint: 'http://127.0.0.1:4318'}\n")
    state = tmp_path / "state"
    args = ["serve", "--port", "0", "--state-dir", str(state), "--config", str(config)]
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_OTEL, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    message = " ".join(done.stderr.split())  # the console wraps long lines
    assert "pipx install --force '.[otel]'" in message
    assert "zipapp" in message
    assert not (state / "server.json").exists()
