"""TraceFanout: a broken consumer never fails the others, and is logged by type, rarely."""

from __future__ import annotations

import logging

import pytest

from gw.record import TraceRecord
from gw.telemetry.fanout import TraceFanout
from gw.telemetry.throttled_log import ThrottledLog


def make_trace(n: int) -> TraceRecord:
    return TraceRecord(
        request_id=f"req-{n}",
        time=0.0,
        endpoint="chat.completions",
        requested_model="chat",
        stream=False,
        status=200,
        revision=1,
        latency_ms=1.0,
    )


class BrokenSink:
    def submit(self, trace: TraceRecord) -> None:
        raise ValueError(f"cannot take {trace.request_id}: secret content")


class ListSink:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def submit(self, trace: TraceRecord) -> None:
        self.seen.append(trace.request_id)


def test_a_broken_consumer_is_logged_by_type_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    healthy = ListSink()
    log = ThrottledLog(logging.getLogger("gw.telemetry"), interval=60.0, clock=lambda: now[0])
    fanout = TraceFanout([BrokenSink(), healthy], log=log)
    with caplog.at_level(logging.WARNING, logger="gw.telemetry"):
        for n in range(3):
            fanout.submit(make_trace(n))
        now[0] = 61.0
        fanout.submit(make_trace(3))
    assert healthy.seen == ["req-0", "req-1", "req-2", "req-3"]
    assert fanout.failures == 4
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "trace consumer BrokenSink failed: ValueError (failures so far: 1)",
        "trace consumer BrokenSink failed: ValueError (failures so far: 4)",
    ]
    assert all(record.exc_info is None for record in caplog.records)  # no traceback
    assert "secret" not in caplog.text
