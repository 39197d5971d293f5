"""Context-window errors told from every known wording, and only from request errors."""

from __future__ import annotations

import pytest

from gw.codecs.context_window import refine_context_window, says_context_window
from gw.errors import ContextLengthExceededError, InvalidRequestError, RateLimitedError

WORDINGS = [
    "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens "
    "(8000 in the messages, 1000 in the completion). Please reduce the length of the messages "
    "or completion.",
    "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError",
    "Error code: context_length_exceeded",
    "the request exceeds the available context size, try increasing it",
    "the input length exceeds the context length",
    "prompt is too long: 208310 tokens > 200000 maximum",
    "Input is too long for requested model.",
    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum "
    "context length",
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 5000",
    "Please reduce the length of the messages.",
]
NOT_WORDINGS = [
    "Invalid value for 'temperature'",
    "messages.0: 'prompt is too long' is not a tool",  # quoting the client is not a verdict
    'Unknown tool "maximum context length"',
    "Rate limit reached on tokens per min (TPM)",
    "",
]


@pytest.mark.parametrize("text", WORDINGS)
def test_known_wordings_are_recognised(text: str) -> None:
    assert says_context_window(text)
    assert refine_context_window(InvalidRequestError, text) is ContextLengthExceededError


@pytest.mark.parametrize("text", NOT_WORDINGS)
def test_other_texts_are_not(text: str) -> None:
    assert not says_context_window(text)


def test_only_request_errors_are_refined() -> None:
    text = WORDINGS[0]
    assert refine_context_window(RateLimitedError, text) is RateLimitedError
    assert not says_context_window(None)
