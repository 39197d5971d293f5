"""Guardrail rules as compiled (gw/config/guardrails.py) and applied to text and streams
(gw/execution/guardrail_check.py): what each PII kind finds and what it leaves alone,
masks and their counts, a match split across stream chunks, and a timeout that fails
closed."""

from __future__ import annotations

import pytest

from gw.config.control_schema import GuardrailConfig
from gw.config.guardrails import GuardrailTimeoutError, compile_guardrails
from gw.config.schema import Config, PolicyConfig
from gw.config.units import Duration
from gw.errors import ContentBlockedError
from gw.execution.guardrail_check import StreamGuard, guard_input
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    EmbeddingRequest,
    NativeBlock,
    SystemMessage,
    TextPart,
    ToolCall,
    UserMessage,
)


def guards(*rules: GuardrailConfig):
    config = Config(
        guardrails=rules,
        policies=(PolicyConfig(name="p", guardrails=tuple(rule.name for rule in rules)),),
    )
    found = compile_guardrails(config).for_policy("p")
    assert found is not None
    return found


PII = GuardrailConfig(name="pii", action="mask", pii=("email", "phone", "card", "key"))


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("write to a.b+c@mail.example.co.uk now", "write to [EMAIL] now"),
        ("call +44 20 7946 0958 today", "call [PHONE] today"),
        ("call (415) 555-0132 or 415.555.0199", "call [PHONE] or [PHONE]"),
        ("card 4111-1111-1111-1111.", "card [CARD]."),
        ("card 378282246310005 (amex)", "card [CARD] (amex)"),
        ("key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv here", "key [KEY] here"),
        ("aws AKIAIOSFODNN7EXAMPLE", "aws [KEY]"),
        ("tok ghp_" + "a1" * 18, "tok [KEY]"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- ok", "[KEY] ok"),
        ("ref 1 4111 1111 1111 1111 ok", "ref 1 [CARD] ok"),  # a digit before the card
    ],
)
def test_each_kind_of_pii_is_masked(text: str, masked: str) -> None:
    rule = guards(PII).input_mask[0]
    counts: dict[str, int] = {}
    assert rule.masked(text, counts, rule.deadline()) == masked
    assert sum(counts.values()) == masked.count("[")


@pytest.mark.parametrize(
    "text",
    [
        "the date 2026-12-06 and the time 10:30",
        "order 1234 5678 and invoice 4111 1111 1111 1112",  # not Luhn-valid
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "version 1.2.3, port 8787, +5 points",
        "email me at support (not an address)",
        "sk-short and sha256 e3b0c44298fc1c149afbf4c8996fb924",
    ],
)
def test_what_only_looks_like_pii_is_left_alone(text: str) -> None:
    rule = guards(PII).input_mask[0]
    counts: dict[str, int] = {}
    assert rule.masked(text, counts, rule.deadline()) == text
    assert counts == {}
    assert not rule.found(text, rule.deadline())


def test_words_match_whole_and_in_any_case_and_patterns_anywhere() -> None:
    rule = guards(GuardrailConfig(name="w", words=("c++", "red fox"), patterns=(r"ID-\d+",)))
    block = rule.input_block[0]
    assert block.found("I like C++.", block.deadline())
    assert block.found("the RED FOX ran", block.deadline())
    assert block.found("see xID-42y", block.deadline())
    assert not block.found("redfox and c+", block.deadline())
    assert not block.found("a c++x b", block.deadline())


def test_a_mask_rewrites_every_message_and_says_how_many_of_each_kind() -> None:
    request = ChatRequest(
        model="m",
        messages=(
            SystemMessage(content=(TextPart(text="admin is root@example.com"),)),
            UserMessage(content=(TextPart(text="mail x@y.io, card 4111111111111111"),)),
        ),
    )
    masked, notes = guard_input(request, guards(PII), "p")
    texts = [part.text for message in masked.messages for part in message.content]  # type: ignore[union-attr]
    assert texts == ["admin is [EMAIL]", "mail [EMAIL], card [CARD]"]
    assert notes == (
        "guardrail 'pii' masked 3 span(s) of the prompt (card 1, email 2) before any "
        "upstream saw it",
    )
    embedded, _ = guard_input(
        EmbeddingRequest(model="m", inputs=("a@b.cd", (1, 2))), guards(PII), "p"
    )
    assert embedded.inputs == ("[EMAIL]", (1, 2))


def test_a_prompt_without_matches_is_the_same_object() -> None:
    request = ChatRequest(model="m", messages=(UserMessage(content=(TextPart(text="hi"),)),))
    assert guard_input(request, guards(PII), "p") == (request, ())


def test_a_stream_match_split_across_chunks_is_found_on_its_last_piece() -> None:
    stream = StreamGuard(guards(GuardrailConfig(name="w", words=("zebra9",))), "p")
    for piece in ("the ", "ze", "br", "a"):
        stream.check(piece)
    with pytest.raises(ContentBlockedError, match="guardrail 'w'"):
        stream.check("9 ")


def test_a_stream_forgets_what_lies_beyond_its_window() -> None:
    rule = GuardrailConfig(name="w", patterns=(r"start.*end",), stream_window=16)
    stream = StreamGuard(guards(rule), "p")
    stream.check("start")
    stream.check("x" * 40)
    stream.check("end")  # "start" is 40 characters back, past the window: not seen


def test_a_search_past_its_timeout_fails_closed() -> None:
    rule = GuardrailConfig(name="slow", patterns=(r"(a|aa)+$",), timeout=Duration(0.01))
    compiled = guards(rule)
    slow = compiled.input_block[0]
    with pytest.raises(GuardrailTimeoutError):
        slow.found("a" * 60 + "b", slow.deadline())
    request = ChatRequest(
        model="m", messages=(UserMessage(content=(TextPart(text="a" * 60 + "b"),)),)
    )
    with pytest.raises(ContentBlockedError, match="fail closed"):
        guard_input(request, compiled, "p")


def test_a_replacement_is_literal_text_never_a_template() -> None:
    rule = guards(
        GuardrailConfig(name="r", action="mask", words=("secretword",), replacement="[\\g<0>]")
    ).input_mask[0]
    assert rule.masked("the secretword here", {}, rule.deadline()) == "the [\\g<0>] here"


def test_the_timeout_covers_every_search_of_one_prompt_together() -> None:
    """Each search alone stays under the limit; together they run past it: refused."""
    rule = GuardrailConfig(name="slow", patterns=(r"(a|aa)+$",), timeout=Duration(0.05))
    many = tuple(UserMessage(content=(TextPart(text="a" * 22 + "!"),)) for _ in range(200))
    with pytest.raises(ContentBlockedError, match="fail closed"):
        guard_input(ChatRequest(model="m", messages=many), guards(rule), "p")


def test_a_mask_reaches_the_interleaved_copy_and_drops_a_quoting_native_form() -> None:
    native = NativeBlock(format="anthropic", data={"type": "text", "text": "mail a@b.io"})
    turn = AssistantMessage(
        content=(TextPart(text="mail a@b.io", native=native),),
        tool_calls=(ToolCall(id="c", name="f", arguments="{}"),),
        blocks=(ToolCall(id="c", name="f", arguments="{}"), TextPart(text="mail a@b.io")),
    )
    request = ChatRequest(model="m", messages=(UserMessage(content=(TextPart(text="hi"),)), turn))
    masked, notes = guard_input(request, guards(PII), "p")
    out = masked.messages[1]
    assert isinstance(out, AssistantMessage)
    assert out.content == (TextPart(text="mail [EMAIL]"),)
    assert out.blocks[1] == TextPart(text="mail [EMAIL]")
    assert "masked 1 span(s)" in notes[0]  # the same text, counted once
