"""What a background job's Responses endpoints answer: its object without output, a
failure in OpenAI's codes, its input items and their pages."""

from __future__ import annotations

from gw.codecs.openai_responses.client_background import (
    failure,
    input_items,
    items_page,
    job_object,
)
from gw.ir import ChatRequest, SystemMessage, TextPart, UserMessage


def test_a_waiting_job_echoes_its_request_and_one_whose_content_is_gone_only_itself() -> None:
    request = ChatRequest(
        model="chat",
        messages=(
            SystemMessage(content=(TextPart(text="be brief"),)),
            UserMessage(content=(TextPart(text="hi"),)),
        ),
        extensions={"openai_responses": {"background": True, "metadata": {"k": "v"}}},
    )
    queued = job_object(
        request, response_id="resp_1", created_at=5.9, model="chat", status="queued"
    )
    assert (queued["status"], queued["output"], queued["created_at"]) == ("queued", [], 5)
    assert (queued["instructions"], queued["background"], queued["metadata"]) == (
        "be brief",
        True,
        {"k": "v"},
    )
    gone = job_object(None, response_id="resp_1", created_at=5.0, model="chat", status="completed")
    assert (gone["instructions"], gone["metadata"], gone["tools"]) == (None, {}, [])


def test_failures_take_openais_codes_and_keep_gws_message() -> None:
    assert failure("rate_limited", "m") == {"code": "rate_limit_exceeded", "message": "m"}
    assert failure("context_length_exceeded", "m")["code"] == "invalid_prompt"
    assert failure("upstream_timeout", "m")["code"] == "server_error"
    failed = job_object(
        None,
        response_id="r",
        created_at=0,
        model="m",
        status="failed",
        error=("internal_error", "gw stopped"),
    )
    assert failed["error"] == {"code": "server_error", "message": "gw stopped"}


def test_input_items_are_listed_as_openai_lists_them() -> None:
    assert input_items({"input": "hello"}, "resp_abc") == [
        {"type": "message", "role": "user", "status": "completed", "id": "in_abc_0",
         "content": [{"type": "input_text", "text": "hello"}]},
    ]  # fmt: skip
    items = input_items(
        {"input": [
            {"role": "assistant", "content": "earlier"},
            {"type": "function_call_output", "call_id": "c1", "output": "42", "id": "fco_1"},
            "not an item",
        ]},
        "resp_abc",
    )  # fmt: skip
    assert items[0]["content"] == [{"type": "output_text", "text": "earlier", "annotations": []}]
    assert items[1] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": "42",
        "id": "fco_1",
    }
    assert len(items) == 2
    assert input_items({}, "resp_abc") == []


def test_pages_go_newest_first_by_default_and_continue_after_an_id() -> None:
    items = [{"id": f"i{n}"} for n in range(5)]
    first = items_page(items, after=None, limit=2, order="desc")
    assert ([i["id"] for i in first["data"]], first["has_more"]) == (["i4", "i3"], True)
    assert (first["first_id"], first["last_id"]) == ("i4", "i3")
    rest = items_page(items, after="i3", limit=10, order="desc")
    assert ([i["id"] for i in rest["data"]], rest["has_more"]) == (["i2", "i1", "i0"], False)
    assert [i["id"] for i in items_page(items, after=None, limit=2, order="asc")["data"]] == [
        "i0",
        "i1",
    ]
    assert items_page(items, after="nope", limit=2, order="asc")["data"] == []
