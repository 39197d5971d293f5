"""The fake OpenAI-compatible upstream every target talks to, and the requests sent to it.

It is ``tests/fakes/openai_upstream.py`` run as its own process: one event loop, no
recording, about 20k non-streaming requests/s here, so it is never the bottleneck (the
run measures it alone first, as the ``direct`` target). Streams have 22 chunks (a role
chunk, 20 one-word content deltas and a finish chunk) with 1 ms between chunks, because
a stream sent in one burst understates what a gateway spends per stream.
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from bench.processes import ProcessSet, Spawned, log_match, wait_for_log_line

ROUTE = "bench"  # the model name clients send, to every target
UPSTREAM_MODEL = "gpt-4o-mini"  # what gateways ask the upstream for
CHAT_PATH = "/v1/chat/completions"
PROMPT = "hi"  # what every request asks, but those of a target whose requests are unique
CONTENT_DELTAS = 20
CHUNKS_PER_STREAM = CONTENT_DELTAS + 2
CHUNK_DELAY_S = 0.001
REPLY = (
    "The quick brown fox jumps over the lazy dog while a patient gateway forwards "
    "every token to the client without adding any noticeable delay"
)
# The bearer key every client request carries. gw in open mode and the fake accept any;
# LiteLLM refuses to start without a master key, so this is its master key.
CLIENT_KEY = "sk-bench-5d1f0c8e2b7a4e96a3c1d0f4b8e2a7c9"
_URL_LINE = r"^(http://127\.0\.0\.1:\d+)/v1$"


def chat_body(*, stream: bool, prompt: str = PROMPT) -> bytes:
    """The client request: the smallest realistic chat completion."""
    body: dict[str, object] = {
        "model": ROUTE,
        "messages": [{"role": "user", "content": prompt}],
    }
    if stream:
        body["stream"] = True
    return msgspec.json.encode(body)


def start_upstream(processes: ProcessSet, repo: Path, env: dict[str, str]) -> Spawned:
    """Start the fake upstream on a free loopback port (it prints its base URL)."""
    argv = [
        sys.executable,
        "-m",
        "fakes.openai_upstream",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--text",
        REPLY,
        "--chunks",
        str(CONTENT_DELTAS),
        "--delay-between-chunks",
        str(CHUNK_DELAY_S),
    ]
    return processes.spawn("upstream", argv, cwd=repo / "tests", env=env)


def upstream_origin(spawned: Spawned, timeout: float = 30.0) -> str:
    """``http://127.0.0.1:<port>``, as the fake printed it once it listens."""
    return wait_for_log_line(spawned, _URL_LINE, timeout).group(1)


def printed_origin(spawned: Spawned) -> str | None:
    """The origin if the fake has printed it yet, else None (never waits)."""
    match = log_match(spawned, _URL_LINE)
    return None if match is None else match.group(1)
