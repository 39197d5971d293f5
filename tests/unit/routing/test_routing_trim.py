"""The trimming rule: oldest whole turns go first; system messages, the current turn and
tool call/result pairs are never parted or dropped; the estimate is routing's own."""

from __future__ import annotations

from gw.ir import AssistantMessage, ChatRequest, SystemMessage, TextPart, ToolMessage, UserMessage
from gw.ir.messages import Message, ToolCall
from gw.routing.estimate import estimate_input_tokens
from gw.routing.trim import cut_points, shortest_form, trim_to_fit

WORDS = "x" * 400  # 100 tokens of text, 104 with a message's framing


def system(text: str = "be brief") -> SystemMessage:
    return SystemMessage(content=(TextPart(text=text),))


def user(text: str = WORDS) -> UserMessage:
    return UserMessage(content=(TextPart(text=text),))


def assistant(text: str = WORDS, *calls: str) -> AssistantMessage:
    return AssistantMessage(
        content=(TextPart(text=text),),
        tool_calls=tuple(ToolCall(id=c, name="look", arguments="{}") for c in calls),
    )


def result(call: str) -> ToolMessage:
    return ToolMessage(tool_call_id=call, content=(TextPart(text=WORDS),))


def chat(*messages: Message) -> ChatRequest:
    return ChatRequest(model="chat", messages=messages)


def texts(request: ChatRequest) -> list[str]:
    return [type(m).__name__ for m in request.messages]


def test_a_request_that_fits_is_left_as_it_is() -> None:
    request = chat(system(), user(), assistant(), user())
    trimmed = trim_to_fit(request, estimate_input_tokens(request))
    assert trimmed.request is request
    assert (trimmed.dropped, trimmed.total) == (0, 4)


def test_oldest_turns_go_first_and_no_more_than_needed() -> None:
    turns = [m for n in range(5) for m in (user(f"q{n} " + WORDS), assistant(f"a{n} " + WORDS))]
    request = chat(system(), *turns, user("now"))
    full = estimate_input_tokens(request)
    # Two turns (four messages of ~104 tokens) must go to fit this budget.
    trimmed = trim_to_fit(request, full - 3 * 104)
    assert trimmed.dropped == 4
    kept = trimmed.request.messages
    assert isinstance(kept[0], SystemMessage)
    assert isinstance(kept[1], UserMessage)
    assert kept[1].content[0].text.startswith("q2 ")  # type: ignore[union-attr]
    assert kept[-1] == request.messages[-1]
    assert trimmed.tokens == estimate_input_tokens(trimmed.request)
    assert trimmed.tokens <= full - 3 * 104


def test_the_system_prompt_and_the_last_user_turn_always_stay() -> None:
    request = chat(system("rules"), user(), assistant(), user(), assistant(), user("last"))
    trimmed = trim_to_fit(request, 1)  # nothing fits: trimmed as far as the rule allows
    assert trimmed.request.messages == (request.messages[0], request.messages[-1])
    assert trimmed.tokens > 1
    assert shortest_form(request) == trimmed.request


def test_system_messages_between_turns_stay_where_they_were() -> None:
    note = system("mid-conversation instruction")
    request = chat(system(), user(), assistant(), note, user(), assistant(), user("last"))
    assert texts(shortest_form(request)) == ["SystemMessage", "SystemMessage", "UserMessage"]
    assert shortest_form(request).messages[1] is note


def test_the_current_turn_keeps_its_tool_calls_and_results() -> None:
    # An agent loop: one user message, then calls and results; all of it is the current turn.
    request = chat(
        system(),
        user("old"),
        assistant("old answer"),
        user("task"),
        assistant("", "c1"),
        result("c1"),
        assistant("", "c2"),
        result("c2"),
    )
    shortest = shortest_form(request)
    assert shortest.messages == (request.messages[0], *request.messages[3:])


def test_a_user_message_between_a_call_and_its_result_begins_no_turn() -> None:
    # A client that put a user note between a call and its result: cutting there would
    # send a result without its call (or a call without its result).
    request = chat(
        user("first"),
        assistant("", "c1"),
        user("meanwhile"),
        result("c1"),
        assistant("done"),
        user("last"),
    )
    assert cut_points(request.messages) == [5]
    assert texts(shortest_form(request)) == ["UserMessage"]


def test_tool_pairs_are_dropped_whole() -> None:
    request = chat(
        system(),
        user("q1"),
        assistant("", "a", "b"),
        result("a"),
        result("b"),
        assistant("answer 1"),
        user("q2"),
        assistant("answer 2"),
        user("q3"),
    )
    budget = estimate_input_tokens(request) - 1
    kept = trim_to_fit(request, budget).request.messages
    kept_results = {m.tool_call_id for m in kept if isinstance(m, ToolMessage)}
    kept_calls = {c.id for m in kept if isinstance(m, AssistantMessage) for c in m.tool_calls}
    assert kept_results == kept_calls
    assert isinstance(kept[1], UserMessage)
    assert kept[1].content[0].text == "q2"  # type: ignore[union-attr]


def test_what_precedes_the_first_user_message_is_the_oldest_turn() -> None:
    request = chat(system(), assistant("hello, how can I help?"), user(), assistant(), user("x"))
    assert cut_points(request.messages) == [2, 4]


def test_nothing_to_drop_when_the_conversation_is_one_turn() -> None:
    request = chat(system(), user())
    assert cut_points(request.messages) == []
    assert shortest_form(request) is request
    trimmed = trim_to_fit(request, 1)
    assert trimmed.request is request
    assert trimmed.dropped == 0
