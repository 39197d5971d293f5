"""An OpenAI Agents SDK agent with one function tool, run against gw as a user would.

Run by tests/e2e/test_agents_openai_sdk.py with the interpreter of build/tools-agents (the
Agents SDK cannot live in gw's dev venv), never imported by the test suite:

    python sdk_agent.py BASE_URL MODEL run|stream

It points the SDK's default client at gw (``AsyncOpenAI(base_url=...)``, the default
Responses model), runs the agent once, and prints one JSON line: the final output, the
arguments the tool was called with, and the kinds of the run's items.
"""

from __future__ import annotations

import asyncio
import json
import sys

from agents import (
    Agent,
    Runner,
    RunResult,
    RunResultStreaming,
    function_tool,
    set_default_openai_client,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

SECRET = "pelican"  # what the tool answers; the fake upstream must receive it back
calls: list[str] = []


@function_tool
def lookup_word(topic: str) -> str:
    """Look up the secret word for a topic."""
    calls.append(topic)
    return f"the secret word for {topic} is {SECRET}"


async def run_streamed(agent: Agent, prompt: str) -> RunResultStreaming:
    result = Runner.run_streamed(agent, prompt)
    async for _event in result.stream_events():
        pass
    return result


def main() -> None:
    base_url, model, mode = sys.argv[1:4]
    set_tracing_disabled(True)  # traces would go to OpenAI's own service
    client = AsyncOpenAI(base_url=base_url, api_key="sk-agents-test", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    agent = Agent(
        name="word finder",
        instructions="Find the secret word with the tool, then say it.",
        tools=[lookup_word],
        model=model,
    )
    prompt = "What is the secret word for birds?"
    result: RunResult | RunResultStreaming
    if mode == "stream":
        result = asyncio.run(run_streamed(agent, prompt))
    else:
        result = Runner.run_sync(agent, prompt)
    items = [item.type for item in result.new_items]
    print(json.dumps({"final_output": result.final_output, "calls": calls, "items": items}))


if __name__ == "__main__":
    main()
