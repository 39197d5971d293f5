"""decide_shaped(): each shaping mode over a route with a small and a large window."""

from __future__ import annotations

import pytest

from gw.config import Snapshot, compile_snapshot, load_config
from gw.errors import ContextLengthExceededError
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    EmbeddingRequest,
    SystemMessage,
    TextPart,
    UserMessage,
)
from gw.ir.messages import Message
from gw.routing import no_candidate_error
from gw.routing.decision import TargetRef
from gw.routing.estimate import estimate_input_tokens
from gw.routing.shaping import decide_shaped

MODES = ("none", "trim", "larger_window", "larger_window_then_trim")
CONFIG = (
    """
providers:
  - {name: local, kind: openai_compatible, base_url: "http://127.0.0.1:11434/v1"}
models:
  - {provider: local, model: small, context_window: 1000}
  - {provider: local, model: large, context_window: 3000}
routes:
"""
    + "".join(
        f"  - {{name: {mode}, targets: [{{provider: local, model: small, priority: 1}}, "
        "{provider: local, model: large, priority: 2}]}\n"
        for mode in MODES
    )
    + "policies:\n"
    + "".join(
        f"  - {{name: shape-{mode}, match: {{routes: [{mode}]}}, shaping: {{mode: {mode}}}}}\n"
        for mode in MODES
    )
)
SMALL = TargetRef(provider="local", model="small")
LARGE = TargetRef(provider="local", model="large")
WORDS = "x" * 400  # about 104 tokens a message


@pytest.fixture(scope="module")
def snapshot() -> Snapshot:
    return compile_snapshot(load_config(CONFIG, "test.yaml"), revision=1, source="t")


def conversation(route: str, turns: int, *, last: str = "and now?", **extra: int) -> ChatRequest:
    messages: list[Message] = [SystemMessage(content=(TextPart(text="be brief"),))]
    for n in range(turns):
        messages.append(UserMessage(content=(TextPart(text=f"q{n} {WORDS}"),)))
        messages.append(AssistantMessage(content=(TextPart(text=f"a{n} {WORDS}"),)))
    messages.append(UserMessage(content=(TextPart(text=last),)))
    return ChatRequest(model=route, messages=tuple(messages), **extra)


def test_a_request_that_fits_every_window_is_never_shaped(snapshot: Snapshot) -> None:
    for mode in MODES:
        request = conversation(mode, 2)
        shaped, decision, _ = decide_shaped(request, snapshot, request_id="r1")
        assert shaped is request
        assert decision.chosen == SMALL
        assert decision.warnings == ()


def test_none_moves_to_the_larger_window_without_a_word(snapshot: Snapshot) -> None:
    request = conversation("none", 10)  # about 2100 tokens: over small's 1000
    shaped, decision, policy = decide_shaped(request, snapshot, request_id="r1")
    assert shaped is request
    assert decision.chain == (LARGE,)
    assert decision.warnings == ()
    assert policy.name == "shape-none"


@pytest.mark.parametrize("mode", ["larger_window", "larger_window_then_trim"])
def test_larger_window_says_the_request_moved(snapshot: Snapshot, mode: str) -> None:
    request = conversation(mode, 10)
    shaped, decision, _ = decide_shaped(request, snapshot, request_id="r1")
    assert shaped is request
    assert decision.chain == (LARGE,)
    tokens = estimate_input_tokens(request)
    assert decision.warnings == (
        f"shaped: routed to local/large (3000-token window) instead of local/small: about "
        f"{tokens} input tokens exceed its 1000-token window (shaping.mode {mode})",
    )
    assert decision.warnings[0] in decision.notes


def test_trim_keeps_the_first_choice_by_dropping_the_oldest_turns(snapshot: Snapshot) -> None:
    request = conversation("trim", 10, max_tokens=200)
    before = estimate_input_tokens(request)
    shaped, decision, policy = decide_shaped(request, snapshot, request_id="r1")
    assert decision.chosen == SMALL
    after = estimate_input_tokens(shaped)
    assert after + 200 <= 1000
    assert decision.estimated_input_tokens == after
    dropped = len(request.messages) - len(shaped.messages)
    assert dropped % 2 == 0  # whole turns
    assert shaped.messages[0] == request.messages[0]
    assert shaped.messages[-1] == request.messages[-1]
    assert shaped.messages[1] == request.messages[1 + dropped]  # the oldest went
    assert decision.warnings == (
        f"shaped: dropped {dropped} of {len(request.messages)} messages (oldest turns) to fit "
        f"local/small's 1000-token window (about {before} -> {after} input tokens; policy "
        "shape-trim, shaping.mode trim)",
    )
    assert policy.name == "shape-trim"


def test_trim_drops_no_more_than_needed(snapshot: Snapshot) -> None:
    request = conversation("trim", 10, max_tokens=200)
    shaped, _, _ = decide_shaped(request, snapshot, request_id="r1")
    # One turn more would have fit the window too: it had to go, or it would have stayed.
    kept_one_more = ChatRequest(
        model="trim",
        messages=(
            request.messages[0],
            *request.messages[len(request.messages) - len(shaped.messages) - 1 :],
        ),
        max_tokens=200,
    )
    assert estimate_input_tokens(kept_one_more) + 200 > 1000


def test_larger_window_then_trim_trims_to_the_largest_window(snapshot: Snapshot) -> None:
    request = conversation("larger_window_then_trim", 20)  # about 4200 tokens: fits none
    shaped, decision, _ = decide_shaped(request, snapshot, request_id="r1")
    assert decision.chain == (LARGE,)
    assert 1000 < estimate_input_tokens(shaped) <= 3000
    assert "to fit local/large's 3000-token window" in decision.warnings[0]


@pytest.mark.parametrize("mode", MODES)
def test_a_turn_too_long_for_every_window_cannot_be_shaped(snapshot: Snapshot, mode: str) -> None:
    request = conversation(mode, 3, last="y" * 20000)  # the current turn alone: 5000 tokens
    shaped, decision, _ = decide_shaped(request, snapshot, request_id="r1")
    assert shaped is request
    assert decision.chain == ()
    error = no_candidate_error(decision)
    assert isinstance(error, ContextLengthExceededError)
    assert f"about {estimate_input_tokens(request)} input tokens" in error.message
    assert "1000-token context window" in error.message
    assert "3000-token context window" in error.message
    if mode in ("trim", "larger_window_then_trim"):
        assert any("could not help" in note for note in decision.notes)
    assert decision.warnings == ()


def test_max_tokens_alone_over_the_window_cannot_be_shaped(snapshot: Snapshot) -> None:
    request = conversation("trim", 3, max_tokens=5000)
    _, decision, _ = decide_shaped(request, snapshot, request_id="r1")
    assert decision.chain == ()
    assert isinstance(no_candidate_error(decision), ContextLengthExceededError)


def test_embeddings_are_never_shaped(snapshot: Snapshot) -> None:
    config = CONFIG.replace(
        "context_window: 1000}", "context_window: 1000, capabilities: [embeddings]}"
    )
    snap = compile_snapshot(load_config(config, "test.yaml"), revision=1, source="t")
    request = EmbeddingRequest(model="trim", inputs=("z" * 8000,))
    shaped, decision, _ = decide_shaped(request, snap, request_id="r1")
    assert shaped is request
    assert decision.warnings == ()
