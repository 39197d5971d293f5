"""RequestCounts: every trace counted once, by status class, and handed on."""

from __future__ import annotations

from gw.record import TraceRecord
from gw.server.admin.status import RequestCounts


class Sink:
    def __init__(self) -> None:
        self.traces: list[TraceRecord] = []

    def submit(self, trace: TraceRecord) -> None:
        self.traces.append(trace)


def trace(status: int) -> TraceRecord:
    return TraceRecord(
        request_id=f"req-{status}",
        time=1.0,
        endpoint="/v1/chat/completions",
        requested_model="chat",
        stream=False,
        status=status,
        revision=1,
        latency_ms=1.0,
    )


def test_counts_by_status_class_and_passes_every_trace_on() -> None:
    sink = Sink()
    counts = RequestCounts(sink)
    for status in (200, 200, 404, 429, 499, 502, 503):
        counts.submit(trace(status))
    assert counts.total == 7
    assert counts.by_class() == {"2xx": 2, "3xx": 0, "4xx": 3, "5xx": 2}
    assert [t.status for t in sink.traces] == [200, 200, 404, 429, 499, 502, 503]
