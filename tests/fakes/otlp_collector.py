"""A fake OpenTelemetry collector: OTLP/HTTP traces (protobuf) on loopback, from a thread.

It accepts ``POST /v1/traces``, keeps each raw body (to scan for what must never be sent)
and its headers, decodes it with the OTLP protobuf types, and answers as a collector does::

    with FakeCollector() as collector:
        ...  # point telemetry.otlp.endpoint at collector.url
        spans = collector.spans()  # [CollectedSpan(name, kind, attributes, ...), ...]
"""

from __future__ import annotations

import gzip
import threading
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


@dataclass(frozen=True)
class CollectedSpan:
    name: str
    kind: int  # opentelemetry.proto.trace.v1.Span.SpanKind: 2 SERVER, 3 CLIENT
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    start_ns: int
    end_ns: int
    status_code: int  # 0 UNSET, 1 OK, 2 ERROR
    status_message: str
    attributes: dict[str, Any]
    resource: dict[str, Any]


@dataclass(frozen=True)
class Export:
    headers: dict[str, str]  # lower-case names
    body: bytes  # decompressed protobuf
    request: ExportTraceServiceRequest


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


def attributes_of(pairs: Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


class FakeCollector:
    def __init__(self) -> None:
        self.exports: list[Export] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                encoding = (self.headers.get("content-encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                headers = {name.lower(): value for name, value in self.headers.items()}
                with collector._lock:
                    collector.exports.append(Export(headers, body, request))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: pytest shows the test's own output

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeCollector:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeCollector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def received(self) -> list[Export]:
        with self._lock:
            return list(self.exports)

    def spans(self) -> list[CollectedSpan]:
        found = []
        for export in self.received():
            for resource_spans in export.request.resource_spans:
                resource = attributes_of(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.append(
                            CollectedSpan(
                                name=span.name,
                                kind=span.kind,
                                trace_id=span.trace_id,
                                span_id=span.span_id,
                                parent_span_id=span.parent_span_id,
                                start_ns=span.start_time_unix_nano,
                                end_ns=span.end_time_unix_nano,
                                status_code=span.status.code,
                                status_message=span.status.message,
                                attributes=attributes_of(span.attributes),
                                resource=resource,
                            )
                        )
        return found
