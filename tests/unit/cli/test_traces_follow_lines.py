"""`gw traces --follow` prints client text (model names, provider/<anything>) without its
control characters: a model name must not drive the operator's terminal."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from gw.cli import traces_follow
from gw.record import TraceRecord

ESCAPES = "evil\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x9b2J"


def hostile() -> TraceRecord:
    return TraceRecord(
        request_id="01JREQ",
        time=0.0,
        endpoint="chat.completions",
        requested_model=ESCAPES,
        stream=False,
        status=502,
        revision=1,
        latency_ms=1.0,
        provider="openai-prod",
        model=ESCAPES,
        error_code="upstream_error",
    )


def test_a_line_shows_client_escapes_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(traces_follow, "stdout", Console(file=out, width=400, color_system=None))
    traces_follow.emit_line(hostile())
    written = out.getvalue()
    assert "\x1b" not in written
    assert "\x9b" not in written
    assert "\x07" not in written
    assert "evil\\x1b]52;c;" in written


def test_a_json_line_has_no_raw_control_character(capsys: pytest.CaptureFixture[str]) -> None:
    traces_follow.emit_json(hostile())
    written = capsys.readouterr().out
    assert not any(ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F for char in written.rstrip("\n"))
    assert json.loads(written)["model"] == ESCAPES  # the data itself is kept exactly
