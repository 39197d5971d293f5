"""Telemetry off the hot path: trace recording and the usage ledger (more to come: metrics,
OTLP)."""

from gw.telemetry.recorder import TraceRecorder, TraceWriter
from gw.telemetry.usage import UsageRecorder, UsageWriter

__all__ = ["TraceRecorder", "TraceWriter", "UsageRecorder", "UsageWriter"]
