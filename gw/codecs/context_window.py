"""A prompt too long for the model's context window, told from the upstream's own words.

Providers and the servers in front of them word it differently and few give a code, so
a request error (``invalid_request``) whose text matches one of ``WORDINGS`` becomes
``context_length_exceeded``: the client learns to shorten the prompt, and routing may
try a larger window. Only request errors are refined: a 429 that mentions tokens is a
rate limit, a 5xx stays a server fault.
"""

from __future__ import annotations

import re

from gw.errors import ContextLengthExceededError, GatewayError, InvalidRequestError

# Each pattern is followed by an example of the wording it is for.
WORDINGS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        # OpenAI, vLLM, DeepSeek, OpenRouter, Mistral: "This model's maximum context length
        # is 8192 tokens", "... too large for model with 32768 maximum context length"
        r"maximum context length",
        # LiteLLM: "litellm.ContextWindowExceededError: ..."; codes echoed as text
        r"context_?window_?exceeded|context_length_exceeded",
        # llama.cpp: "the request exceeds the available context size"; Ollama: "the input
        # length exceeds the context length"; others: "exceeds the context window"
        r"exceeds? (the )?(available |model'?s? )?context (size|length|window)",
        r"context (length|window|size) (of \d+ tokens )?(was |is )?exceeded",
        # Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
        r"prompt is too long",
        # Bedrock: "Input is too long for requested model"
        r"input is too long",
        # Gemini: "The input token count (1200000) exceeds the maximum number of tokens"
        r"input token count \(\d+\) exceeds",
        # OpenAI's older wording, Groq: "Please reduce the length of the messages"
        r"reduce the length of the (messages|prompt|input)",
        # Hugging Face TGI: "`inputs` tokens + `max_new_tokens` must be <= 4096"
        r"tokens \+ `?max_new_tokens`? must be <=",
    )
)


# What an upstream quotes (often the client's own input) is not its verdict.
# An apostrophe inside a word ("model's") opens no quote.
_QUOTED = re.compile(r"(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"")


def says_context_window(text: str | None) -> bool:
    """True when ``text``, outside what it quotes, is a known wording of a too-long prompt."""
    if not text:
        return False
    own_words = _QUOTED.sub("", text)
    return any(pattern.search(own_words) for pattern in WORDINGS)


def refine_context_window(cls: type[GatewayError], text: str | None) -> type[GatewayError]:
    """``cls``, or ``ContextLengthExceededError`` for a request error worded as one."""
    if cls is InvalidRequestError and says_context_window(text):
        return ContextLengthExceededError
    return cls
