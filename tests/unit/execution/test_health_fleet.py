"""HealthBook in a fleet: what it hands its ``BreakerShare``, what it takes from the
other gateways, and the half-open trial that only the fleet's winner sends.

A recording share stands in for gw/fleet/ (tested in tests/unit/fleet); time is a number.
"""

from __future__ import annotations

from gw.config.schema import HealthConfig
from gw.config.units import Duration
from gw.execution.breaker_gate import gate_breakers
from gw.execution.health import HealthBook
from gw.ports import TrialClaim
from gw.routing.decision import RouteDecision, TargetRef
from gw.routing.health import TargetVerdict

KEY = "openai/gpt-4o-mini"
CONFIG = HealthConfig(
    degraded_after=2, unhealthy_after=2, cooldown=Duration(5.0), trial_timeout=Duration(30.0)
)


class RecordingShare:
    """A ``BreakerShare`` that remembers each call and answers claims as told."""

    def __init__(self, claim: TrialClaim = "asking") -> None:
        self.calls: list[tuple[str, ...]] = []
        self.claim = claim

    def opened(self, key: str, *, cooldown: float, openings: int, cause: str) -> None:
        self.calls.append(("opened", key, f"{cooldown:g}", str(openings), cause))

    def closed(self, key: str) -> None:
        self.calls.append(("closed", key))

    def claim_trial(self, key: str, *, ttl: float) -> TrialClaim:
        self.calls.append(("claim", key, f"{ttl:g}"))
        return self.claim


def opened_book(share: RecordingShare, now: float = 100.0) -> HealthBook:
    book = HealthBook(CONFIG, share=share)
    book.record(KEY, False, now=now)
    book.record(KEY, False, now=now)
    return book


def test_an_opening_and_a_trial_that_closes_are_told_to_the_fleet_once() -> None:
    share = RecordingShare(claim="won")
    book = opened_book(share)
    assert share.calls == [("opened", KEY, "5", "1", "2 consecutive failures")]
    book.record(KEY, False, now=101.0)  # in flight when it opened: changes nothing
    assert len(share.calls) == 1

    assert book.claim_trial(KEY, now=105.0)  # "won" at once: no fleet, or Redis is down
    book.record(KEY, False, now=105.5, trial=True)  # the trial fails: reopened, wider
    assert share.calls[-1] == ("opened", KEY, "10", "2", "its half-open trial failed")
    assert book.claim_trial(KEY, now=116.0)
    book.record(KEY, True, now=116.5, trial=True)
    assert share.calls[-1] == ("closed", KEY)
    assert book.state(KEY, now=117.0).breaker == "closed"


def test_the_trial_waits_for_the_fleets_answer_and_only_the_winner_sends_it() -> None:
    share = RecordingShare()
    book = opened_book(share)
    assert not book.claim_trial(KEY, now=105.0)  # asked the fleet: no answer yet
    asking = book.state(KEY, now=105.0)
    assert (asking.breaker, asking.trial_available) == ("half_open", False)
    assert "asking the fleet" in asking.reason
    assert not book.claim_trial(KEY, now=105.1)
    assert [c[0] for c in share.calls] == ["opened", "claim"]  # asked once, not per request

    book.fleet_trial(KEY, holder=None, remaining=30.0, now=105.2)
    assert book.state(KEY, now=105.2).trial_available
    assert book.claim_trial(KEY, now=105.3)  # won: this request is the trial
    assert not book.claim_trial(KEY, now=105.4)  # one trial per win
    assert book.state(KEY, now=105.4).reason.endswith("a trial request is in flight")


def test_a_lost_claim_keeps_the_target_skipped_until_the_holders_claim_lapses() -> None:
    share = RecordingShare()
    book = opened_book(share)
    book.claim_trial(KEY, now=105.0)
    book.fleet_trial(KEY, holder="gw-b", remaining=20.0, now=105.0)
    lost = book.state(KEY, now=110.0)
    assert (lost.trial_available, lost.trial_holder, lost.trial_until) == (False, "gw-b", 125.0)
    assert "gateway gw-b is sending the fleet's trial" in lost.reason
    assert not book.claim_trial(KEY, now=110.0)

    decision = RouteDecision(
        route="chat",
        direct=False,
        policy="default",
        strategy="priority",
        chain=(TargetRef(provider="openai", model="gpt-4o-mini"),),
        candidates=(),
        estimated_input_tokens=1,
        max_output_tokens=None,
    )

    view = {KEY: TargetVerdict(status="unhealthy", reason=lost.reason)}
    gated = gate_breakers(decision, view, book, now=110.0)
    assert gated.decision.chain == ()
    assert gated.recovery == 125.0
    assert "gateway gw-b is sending the fleet's half-open trial" in gated.decision.notes[-1]

    # The holder never reported: its claim lapsed, so this gateway asks again.
    assert not book.claim_trial(KEY, now=125.0)
    assert [c[0] for c in share.calls].count("claim") == 2


def test_an_answer_nobody_waits_for_is_dropped() -> None:
    book = HealthBook(CONFIG, share=RecordingShare())
    book.fleet_trial(KEY, holder=None, remaining=30.0, now=1.0)  # never asked
    assert book.state(KEY, now=1.0).breaker == "closed"


def test_another_gateways_opening_applies_here_and_says_whose_it_is() -> None:
    share = RecordingShare()
    book = HealthBook(CONFIG, share=share)
    assert book.open_remote(
        KEY, gateway="gw-a", remaining=4.0, cooldown=5.0, openings=1, cause="9 failures", now=50.0
    )
    state = book.state(KEY, now=51.0)
    assert (state.status, state.breaker, state.opened_by) == ("unhealthy", "open", "gw-a")
    assert state.reason.startswith("breaker opened by gateway gw-a, fleet-wide: 9 failures")
    assert KEY in book.flagged(now=51.0)
    assert share.calls == []  # not echoed back to the fleet

    # An older, shorter opening changes nothing; a longer one wins.
    assert not book.open_remote(
        KEY, gateway="gw-c", remaining=1.0, cooldown=5.0, openings=1, cause="x", now=51.0
    )
    assert book.open_remote(
        KEY, gateway="gw-c", remaining=9.0, cooldown=10.0, openings=2, cause="y", now=51.0
    )
    assert book.state(KEY, now=51.0).openings == 2

    assert book.close_remote(KEY)
    closed = book.state(KEY, now=52.0)
    assert (closed.status, closed.breaker, closed.opened_by) == ("healthy", "closed", None)
    assert not book.close_remote(KEY)  # already closed
    assert share.calls == []


def test_a_remote_opening_is_widened_by_a_local_failed_trial() -> None:
    share = RecordingShare(claim="won")
    book = HealthBook(CONFIG, share=share)
    book.open_remote(
        KEY, gateway="gw-a", remaining=0.0, cooldown=5.0, openings=1, cause="c", now=10.0
    )
    assert book.claim_trial(KEY, now=10.0)
    book.record(KEY, False, now=10.5, trial=True)
    assert share.calls[-1] == ("opened", KEY, "10", "2", "its half-open trial failed")
    assert book.state(KEY, now=11.0).opened_by is None  # this gateway's own opening now
