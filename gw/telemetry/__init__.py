"""Telemetry off the hot path: trace recording (more to come: usage rows, metrics, OTLP)."""

from gw.telemetry.recorder import TraceRecorder, TraceWriter

__all__ = ["TraceRecorder", "TraceWriter"]
