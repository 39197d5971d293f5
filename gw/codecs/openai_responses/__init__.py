"""The OpenAI Responses API (``POST /v1/responses``), both ways: client_* for clients of
gw's Responses ingress, upstream_* for ``kind: openai_responses`` providers. The mapping
to the IR is described in each module; both sides share it.

Upstream side: ``encode_upstream_request`` (with ``lossy_notes``), ``decode_upstream_response``,
``UpstreamStreamDecoder``, ``error_from_upstream``.
"""

from gw.codecs.openai_responses.upstream_errors import error_from_upstream
from gw.codecs.openai_responses.upstream_request import encode_upstream_request, lossy_notes
from gw.codecs.openai_responses.upstream_response import decode_upstream_response
from gw.codecs.openai_responses.upstream_stream import UpstreamStreamDecoder

__all__ = [
    "UpstreamStreamDecoder",
    "decode_upstream_response",
    "encode_upstream_request",
    "error_from_upstream",
    "lossy_notes",
]
