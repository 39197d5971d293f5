"""Codex's namespace tools through gw: offered to any upstream as joined function names,
and to a Responses upstream as the namespace it was, with calls going both ways."""

from __future__ import annotations

import json
from typing import Any

from gw.codecs.openai_responses.client_request import decode_responses_request
from gw.codecs.openai_responses.client_response import encode_responses_response
from gw.codecs.openai_responses.upstream_request import encode_upstream_request
from gw.codecs.openai_responses.upstream_response import decode_upstream_response

NAMESPACE = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "sub-agents",
    "tools": [{"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}}],
}
SHELL = {"type": "function", "name": "exec_command", "parameters": {"type": "object"}}
CALL = {
    "type": "function_call",
    "call_id": "c1",
    "name": "spawn_agent",
    "namespace": "multi_agent_v1",
    "arguments": "{}",
}


def client_request(**extra: Any) -> Any:
    body = {"model": "m", "input": "go", "tools": [SHELL, NAMESPACE], **extra}
    return decode_responses_request(json.dumps(body).encode())


def test_a_responses_upstream_gets_the_namespace_as_it_came_and_calls_in_it() -> None:
    history = [
        {"role": "user", "content": "go"},
        CALL,
        {"type": "function_call_output", "call_id": "c1", "output": "spawned"},
    ]
    request = client_request(input=history)
    sent = json.loads(encode_upstream_request(request, model="gpt-5", stream=False))
    assert sent["tools"] == [{**SHELL, "strict": False}, NAMESPACE]
    assert [item for item in sent["input"] if item.get("type") == "function_call"] == [CALL]


def test_an_upstream_call_in_a_namespace_reaches_the_client_as_one() -> None:
    answer = {
        "id": "resp_up",
        "model": "gpt-5",
        "status": "completed",
        "output": [{**CALL, "id": "fc_up", "status": "completed"}],
    }
    response = decode_upstream_response(json.dumps(answer).encode())
    assert response.tool_calls[0].name == "multi_agent_v1__spawn_agent"
    body = json.loads(
        encode_responses_response(response, client_request(), response_id="resp_x", created_at=1)
    )
    [item] = body["output"]
    assert (item["name"], item["namespace"], item["call_id"]) == (
        "spawn_agent",
        "multi_agent_v1",
        "c1",
    )
