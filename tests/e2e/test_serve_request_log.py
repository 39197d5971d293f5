"""The request log of a live gw: with stderr not a terminal, one JSON line per request,
carrying the request id the client saw and never the prompt; gw's own log lines are JSON
objects too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

PROMPT = "the lighthouse keeper's marmalade recipe"


def json_lines(log: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.splitlines() if line.startswith("{")]


def request_lines(gw: GwServer, count: int = 1) -> list[dict[str, Any]]:
    """Lines are written off the hot path: poll (bounded) until ``count`` have landed."""

    def landed() -> list[dict[str, Any]] | None:
        lines = [line for line in json_lines(gw.log()) if line.get("event") == "request"]
        return lines if len(lines) >= count else None

    return wait_until(landed, lambda: f"{count} request line(s) in the log:\n{gw.log()}")


def test_one_json_line_per_request_with_its_request_id(tmp_path: Path) -> None:
    with GwServer(tmp_path / "state") as gw:
        client = openai.OpenAI(base_url=gw.base_url, api_key="anything", max_retries=0)
        raw = client.chat.completions.with_raw_response.create(
            model="mock", messages=[{"role": "user", "content": PROMPT}]
        )
        request_id = raw.headers["x-gw-request-id"]
        lines = request_lines(gw)
        gw.stop()
        log = gw.log()
    assert len(lines) == 1, log
    (line,) = lines
    assert line["request_id"] == request_id
    assert line["event"] == "request"
    assert line["level"] == "info"
    assert line["endpoint"] == "chat.completions"
    assert line["route"] == "mock"
    assert line["status"] == 200
    assert line["error_code"] is None
    assert line["attempts"] == 1
    assert line["input_tokens"] > 0
    assert line["stream"] is False
    assert isinstance(line["latency_ms"], float)
    assert "marmalade" not in log
    # gw's own log lines (here: the store's migration on first start) are JSON objects too.
    assert any(line["event"] == "log" and line["logger"] == "gw.store" for line in json_lines(log))


def test_a_failed_request_logs_its_code_not_its_message(tmp_path: Path) -> None:
    with GwServer(tmp_path / "state") as gw:
        client = openai.OpenAI(base_url=gw.base_url, api_key="anything", max_retries=0)
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(
                model="no-such-model",
                messages=[{"role": "user", "content": PROMPT}],
            )
        lines = request_lines(gw)
    assert len(lines) == 1
    assert lines[0]["status"] == 404
    assert lines[0]["error_code"] == "model_not_found"
    assert lines[0]["level"] == "warning"
    assert lines[0]["route"] == "no-such-model"
    assert "marmalade" not in json.dumps(lines[0])
