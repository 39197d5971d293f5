"""Micro-benchmarks of gw's pure parts, in-process, with timeit: the median time per call.

- the routing decision (``gw.routing.router.decide``) for a route of 10 targets, once per
  strategy that needs no observed data (``priority`` is the default and the one the goal
  judges), on a snapshot compiled the way the server compiles one;
- the OpenAI request decode (client JSON -> IR) of a realistic multi-turn body with a tool;
- the OpenAI response encode (IR -> ``chat.completion`` JSON) of a 60-word answer.
"""

from __future__ import annotations

import functools
import statistics
import timeit
from collections.abc import Callable

import msgspec

from bench.results import MicroResult
from gw.codecs.openai_chat import decode_chat_request, encode_chat_response
from gw.config import compile_snapshot, load_config
from gw.config.snapshot import Snapshot
from gw.ir import ChatRequest, ChatResponse, SystemMessage, TextPart, Usage, UserMessage
from gw.routing.router import decide

ROUTE_TARGETS = 10
STRATEGIES = ("priority", "lowest_cost", "weighted")


def routing_config(targets: int = ROUTE_TARGETS) -> str:
    """Providers p0..pN-1 with one catalogued model each; one route per strategy."""
    lines = ["providers:"]
    for i in range(targets):
        lines += [
            f"  - name: p{i}",
            "    kind: openai_compatible",
            f"    base_url: http://127.0.0.1:{9000 + i}/v1",
        ]
    lines.append("models:")
    for i in range(targets):
        lines.append(
            f"  - {{provider: p{i}, model: m{i}, input_per_mtok: {0.1 + i / 10:.2f}, "
            f"output_per_mtok: {0.4 + i / 5:.2f}, context_window: 128000, "
            "capabilities: [tools, json_object]}"
        )
    lines.append("routes:")
    for strategy in STRATEGIES:
        lines += [f"  - name: r-{strategy}", f"    strategy: {strategy}", "    targets:"]
        lines += [
            f"      - {{provider: p{i}, model: m{i}, priority: {i + 1}, weight: {i + 1}}}"
            for i in range(targets)
        ]
    lines += [
        "policies:",
        "  - name: default",
        '    match: {routes: ["*"]}',
        "    limits: {max_output_tokens: 4096, max_cost_per_request_usd: 0.25}",
    ]
    return "\n".join(lines) + "\n"


def routing_snapshot() -> Snapshot:
    return compile_snapshot(load_config(routing_config(), "bench"), revision=1, source="bench")


def routing_request(route: str) -> ChatRequest:
    return ChatRequest(
        model=route,
        messages=(
            SystemMessage(content=(TextPart(text="You are a helpful assistant."),)),
            UserMessage(content=(TextPart(text="Summarise the plot of Hamlet in one line."),)),
        ),
        max_tokens=512,
    )


def chat_request_body() -> bytes:
    """What an SDK sends for a short conversation with one tool and sampling settings."""
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
                "required": ["city"],
            },
        },
    }
    messages = [
        {"role": "system", "content": "You are a concise assistant. Answer in English."},
        {"role": "user", "content": "What should I pack for three days in Lisbon in May?"},
        {"role": "assistant", "content": "Light layers, a rain jacket and walking shoes."},
        {"role": "user", "content": "And will it rain on Saturday? Check the forecast."},
    ]
    body = {
        "model": "gpt-4o-mini",
        "messages": messages,
        "tools": [tool],
        "tool_choice": "auto",
        "temperature": 0.7,
        "max_tokens": 512,
        "user": "user-1234",
    }
    return msgspec.json.encode(body)


def chat_response() -> ChatResponse:
    text = " ".join(["Lisbon in May is mild and mostly dry, so pack light layers."] * 5)
    return ChatResponse(
        id="chatcmpl-bench",
        model="gpt-4o-mini",
        text=text,
        finish_reason="stop",
        usage=Usage(input_tokens=96, output_tokens=60),
        created=1_700_000_000,
    )


def time_call(name: str, call: Callable[[], object], repeats: int) -> MicroResult:
    """timeit's autorange (>= 0.2 s per repeat), then the median of ``repeats`` repeats."""
    timer = timeit.Timer(call)
    loops, _ = timer.autorange()
    times = timer.repeat(repeat=repeats, number=loops)
    return MicroResult(name, statistics.median(times) / loops * 1e6, loops, repeats)


def run_micro(repeats: int) -> list[MicroResult]:
    snapshot = routing_snapshot()
    results = []
    for strategy in STRATEGIES:
        request = routing_request(f"r-{strategy}")
        decision, _ = decide(request, snapshot, request_id="req_bench")
        if len(decision.chain) != ROUTE_TARGETS:
            raise RuntimeError(f"routing benchmark: {strategy} kept {len(decision.chain)} targets")
        results.append(
            time_call(
                f"routing decision, {ROUTE_TARGETS} targets, {strategy}",
                functools.partial(decide, request, snapshot, request_id="req_bench"),
                repeats,
            )
        )
    body = chat_request_body()
    decode_chat_request(body)  # fails loudly here if the body stops being valid
    results.append(time_call("OpenAI request decode", lambda: decode_chat_request(body), repeats))
    response = chat_response()
    results.append(
        time_call(
            "OpenAI response encode",
            lambda: encode_chat_response(response, model="gpt-4o-mini"),
            repeats,
        )
    )
    return results
