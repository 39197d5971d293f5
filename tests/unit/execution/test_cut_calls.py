"""Tool calls cut short by the output limit (gw/ir/cut_calls.py)."""

from __future__ import annotations

from gw.ir import ChatResponse, TextPart, ToolCall
from gw.ir.cut_calls import StreamedCalls, drop_cut_calls, whole_arguments

WHOLE = ToolCall(id="a", name="first", arguments='{"city": "Paris"}')
CUT = ToolCall(id="b", name="get_weather", arguments='{"city": "Par')


def test_whole_arguments() -> None:
    assert whole_arguments("")
    assert whole_arguments("  ")
    assert whole_arguments('{"a": 1}')
    assert not whole_arguments('{"a": ')
    assert not whole_arguments("[1, 2]")  # a call's arguments are an object


def test_a_cut_call_is_dropped_only_from_an_answer_ended_by_the_limit() -> None:
    answer = ChatResponse(
        id="r",
        model="m",
        tool_calls=(WHOLE, CUT),
        blocks=(TextPart(text="hi"), WHOLE, CUT),
        finish_reason="length",
    )
    trimmed, notes = drop_cut_calls(answer)
    assert trimmed.tool_calls == (WHOLE,)
    assert trimmed.blocks == (TextPart(text="hi"), WHOLE)
    assert trimmed.finish_reason == "length"
    assert notes == (
        "tool call get_weather was cut short by the output limit (finish: length) and dropped",
    )
    ended = ChatResponse(id="r", model="m", tool_calls=(CUT,), finish_reason="tool_calls")
    assert drop_cut_calls(ended) == (ended, ())


def test_a_streamed_call_is_noted_not_dropped() -> None:
    calls = StreamedCalls()
    calls.take(0, "first", '{"a"')
    calls.take(0, None, ": 1}")
    calls.take(1, "get_weather", '{"city": "Par')
    assert calls.cut_notes() == (
        "tool call get_weather was cut short by the output limit (finish: length)",
    )
