"""Values the cases send and the checks look for: distinctive, so a check finds the
client's own value in the upstream body, never a default an encoder adds."""

from __future__ import annotations

from typing import Any

SYSTEM_TEXT = "sys-7f3"
USER_TEXT = "user-7f3"
OTHER_TEXT = "more-7f3"
ASSISTANT_TEXT = "answer-7f3"
THOUGHT_TEXT = "thought-7f3"
IMAGE_URL = "https://example.com/cat-7f3.png"
IMAGE_DATA = "iVBORw0KGgo7f3AAAA"
PDF_DATA = "JVBERi0xLjcK7f3"
PDF_URL = "https://example.com/paper-7f3.pdf"
FILE_ID = "file-7f3"
FILENAME = "paper-7f3.pdf"
TOOL = "get_weather"
CALL_ID = "call_7f3"
RESULT_TEXT = "result-7f3"
SIGNATURE = "c2lnLTdmMw=="
REDACTED = "cmVkYWN0ZWQtN2Yz"
STOP = "STOP-7f3"
USER_ID = "user-id-7f3"
MESSAGE_NAME = "alice7f3"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
