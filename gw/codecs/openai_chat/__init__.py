"""The OpenAI Chat Completions wire format, both directions, sans I/O.

Client side: ``decode_chat_request``, ``encode_chat_response``, ``ChatStreamEncoder``,
``encode_error``. Upstream side: ``encode_upstream_request``, ``decode_upstream_response``,
``UpstreamStreamDecoder``, ``error_from_upstream``. Embeddings (``POST /v1/embeddings``),
both sides, are in ``embeddings``.
"""

from gw.codecs.openai_chat.client_errors import ERROR_TYPES, encode_error
from gw.codecs.openai_chat.client_request import decode_chat_request
from gw.codecs.openai_chat.client_response import encode_chat_response
from gw.codecs.openai_chat.client_stream import ChatStreamEncoder
from gw.codecs.openai_chat.embeddings import (
    decode_embeddings_request,
    decode_upstream_embeddings_response,
    encode_embeddings_response,
    encode_upstream_embeddings_request,
    requested_encoding,
)
from gw.codecs.openai_chat.upstream_errors import (
    CODE_TABLE,
    STATUS_CLASS_TABLE,
    STATUS_TABLE,
    error_from_payload,
    error_from_upstream,
)
from gw.codecs.openai_chat.upstream_request import encode_upstream_request
from gw.codecs.openai_chat.upstream_response import decode_upstream_response
from gw.codecs.openai_chat.upstream_stream import UpstreamStreamDecoder
from gw.codecs.upstream_failure import parse_retry_after

__all__ = [
    "CODE_TABLE",
    "ERROR_TYPES",
    "STATUS_CLASS_TABLE",
    "STATUS_TABLE",
    "ChatStreamEncoder",
    "UpstreamStreamDecoder",
    "decode_chat_request",
    "decode_embeddings_request",
    "decode_upstream_embeddings_response",
    "decode_upstream_response",
    "encode_chat_response",
    "encode_embeddings_response",
    "encode_error",
    "encode_upstream_embeddings_request",
    "encode_upstream_request",
    "error_from_payload",
    "error_from_upstream",
    "parse_retry_after",
    "requested_encoding",
]
