"""Per-target health and circuit breaker: outcomes in, a verdict in words out. No I/O.

A target is keyed ``provider/model``. Every method takes ``now``, the caller's
``Clock.monotonic()``; the book reads no clock itself, so tests drive it with plain numbers.
Thresholds come from ``HealthConfig`` (config ``health:``).

Rules, as implemented:

- **Closed** breaker. Each live outcome (``record``) enters a rolling error-rate window; a
  success resets the consecutive-failure count. ``degraded_after`` consecutive failures
  make the target *degraded* (still eligible, ordered last). A live failure opens the
  breaker when the count reaches ``unhealthy_after``, or when it leaves the window with at
  least ``min_requests`` calls and a failure share above ``error_rate``.
- **Open**: *unhealthy* (excluded) for a cooldown of ``cooldown * 2**(n-1)`` for the n-th
  opening in a row, capped at ``max_cooldown``. Outcomes recorded meanwhile that are not
  the trial's (requests already in flight when it opened) change nothing.
- **Half-open** (the cooldown has lapsed): still *unhealthy*, with ``trial_available``.
  ``claim_trial`` returns True to exactly one caller and False to every other until that
  trial's outcome is recorded (``record(..., trial=True)``) or ``trial_timeout`` passes,
  after which the next caller may claim a fresh trial (a lost trial cannot wedge the
  breaker). A trial is one attempt: its success closes the breaker and forgets the
  failures, the window and the widening; its failure reopens with the next, wider cooldown.
- **Probes** (``record_probe``) never open or close a breaker and never enter the window.
  While closed, a probe success resets the consecutive-failure count (a degraded target
  that answers probes is healthy again) and a probe failure adds one consecutive failure
  but never lifts the count past ``degraded_after``: probes may degrade, only live
  failures open, and the window, which probes cannot touch, still opens a breaker that
  live traffic keeps failing. While open or half-open a probe is only remembered
  (``last_probe_ok``): only the live trial closes.
- **A fleet** (``share``, a ``BreakerShare``: gw/fleet/): each opening and each trial's
  close is handed to ``share``, which tells the other gateways; theirs arrive through
  ``open_remote`` and ``close_remote`` and are applied like local ones, remembering which
  gateway opened it (``opened_by``). Decisions stay local, with no round trip per request;
  only at half-open time does ``claim_trial`` ask ``share`` as well, so that one gateway of
  the fleet sends the trial: when the fleet's answer comes later (``fleet_trial``), the
  requests meanwhile treat the target as open. Without a fleet ``share`` wins every trial
  at once and the book behaves as on one machine.

Memory is bounded: the window keeps ``WINDOW_BUCKETS`` fixed buckets per target, not one
entry per call; ``retain(keys)`` forgets targets no longer in config, and past
``max_targets`` (clients may address ``provider/any-model`` directly) the oldest closed
entry is forgotten first. The methods are synchronous, so under asyncio each is atomic:
two tasks racing ``claim_trial`` cannot both win. The book is not thread-safe.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal

import msgspec

from gw.config.schema import HealthConfig
from gw.config.units import Duration
from gw.execution.breaker_share import LOCAL_BREAKERS
from gw.execution.retry_budget import RetryBudget
from gw.ports import BreakerShare

HealthStatus = Literal["healthy", "degraded", "unhealthy"]
BreakerState = Literal["closed", "open", "half_open"]

WINDOW_BUCKETS = 10  # the window is accurate to one bucket: window / 10 seconds
MAX_TARGETS = 10_000
_MAX_DOUBLINGS = 60  # 2**60 * any positive cooldown is past any max_cooldown; avoids overflow


class TargetHealth(msgspec.Struct, frozen=True, kw_only=True):
    """One target's health as of ``now``, for routing, ``gw explain`` and ``gw health``.

    ``status`` is what routing acts on; ``reason`` says why, in words. Deadlines
    (``cooldown_until``, ``trial_until``) are on the monotonic clock the caller passed in.
    """

    key: str
    status: HealthStatus
    reason: str
    breaker: BreakerState = "closed"
    consecutive_failures: int = 0
    window_calls: int = 0
    window_failures: int = 0
    openings: int = 0  # consecutive openings; the next cooldown depends on it
    cooldown_until: float | None = None
    trial_available: bool = False  # half-open with no trial in flight: claim_trial may win
    trial_until: float | None = None  # the claimed trial's deadline
    last_probe_ok: bool | None = None
    opened_by: str | None = None  # the gateway whose breaker opened it; None: this one
    trial_holder: str | None = None  # the other gateway sending the fleet's trial


class _Window:
    """Calls and failures over the last ``span`` seconds, in fixed buckets.

    A bucket remembers which slice of time (``index``) it counts; a slot whose index is
    older than the window is reused. A report older than the window (a slow caller's
    ``now``) is dropped.
    """

    __slots__ = ("_calls", "_failures", "_indexes", "_width")

    def __init__(self, span: float) -> None:
        self._width = span / WINDOW_BUCKETS
        self._indexes: list[int | None] = [None] * WINDOW_BUCKETS
        self._calls = [0] * WINDOW_BUCKETS
        self._failures = [0] * WINDOW_BUCKETS

    def add(self, ok: bool, now: float) -> None:
        index = math.floor(now / self._width)
        slot = index % WINDOW_BUCKETS
        held = self._indexes[slot]
        if held is not None and held > index:
            return
        if held != index:
            self._indexes[slot] = index
            self._calls[slot] = self._failures[slot] = 0
        self._calls[slot] += 1
        if not ok:
            self._failures[slot] += 1

    def totals(self, now: float) -> tuple[int, int]:
        """(calls, failures) in the buckets that overlap the last ``span`` seconds."""
        newest = math.floor(now / self._width)
        calls = failures = 0
        for slot, held in enumerate(self._indexes):
            if held is not None and newest - WINDOW_BUCKETS < held <= newest:
                calls += self._calls[slot]
                failures += self._failures[slot]
        return calls, failures


class _Entry:
    __slots__ = (
        "cause",
        "consecutive",
        "fleet",
        "last_probe_ok",
        "open_until",
        "opened_because",
        "opened_by",
        "openings",
        "trial_until",
        "window",
    )

    def __init__(self, window: float) -> None:
        self.window = _Window(window)
        self.consecutive = 0
        self.openings = 0
        self.open_until: float | None = None  # None: the breaker is closed
        self.opened_because = ""
        self.cause = ""  # opened_because without its cooldown
        self.trial_until: float | None = None  # set while a half-open trial is claimed
        self.last_probe_ok: bool | None = None
        self.opened_by: str | None = None  # another gateway, when its breaker opened this
        self.fleet: _FleetTrial | None = None  # the fleet's answer on this half-open trial


class _FleetTrial:
    """What the fleet said on one half-open trial: still ``asking`` (until ``until``, after
    which it is asked again: a lost answer cannot wedge the breaker), ``won`` (this gateway
    sends it, by ``until``), or ``lost`` to ``holder`` (until its claim lapses)."""

    __slots__ = ("holder", "state", "until")

    def __init__(self, state: Literal["asking", "won", "lost"], until: float, holder: str = ""):
        self.state = state
        self.until = until
        self.holder = holder


class HealthBook:
    """Health of every target seen, keyed ``provider/model``. See the module docstring."""

    def __init__(
        self,
        config: HealthConfig,
        *,
        max_targets: int = MAX_TARGETS,
        share: BreakerShare = LOCAL_BREAKERS,
    ) -> None:
        self._config = config
        self._share = share
        self._max_targets = max_targets
        self._entries: dict[str, _Entry] = {}
        # Keys not healthy now (degraded or breaker open): the per-request view reads only
        # these, so it is empty and free while every target is fine.
        self._flagged: set[str] = set()
        # Retries per target, bounded by its traffic: upstream protection beside the breaker.
        self.retry_budget = RetryBudget(config.retry_budget)

    def flagged(self, *, now: float) -> dict[str, TargetHealth]:
        """The health of every target that is not healthy, by key."""
        if not self._flagged:
            return {}
        states = {key: self.state(key, now=now) for key in self._flagged}
        return {key: health for key, health in states.items() if health.status != "healthy"}

    def reconfigure(self, config: HealthConfig) -> None:
        """Apply new thresholds, keeping breakers; a new window length restarts the windows."""
        if config.window != self._config.window:
            for entry in self._entries.values():
                entry.window = _Window(config.window.seconds)
        self._config = config
        self.retry_budget.reconfigure(config.retry_budget)
        for key, entry in self._entries.items():
            self._reflag(key, entry)

    def retain(self, keys: Iterable[str]) -> None:
        """Forget every target not in ``keys`` (those left the config)."""
        keep = set(keys)
        self.retry_budget.retain(keep)
        for key in [key for key in self._entries if key not in keep]:
            del self._entries[key]
            self._flagged.discard(key)

    def record(self, key: str, ok: bool, *, now: float, trial: bool = False) -> None:
        """Feed one live attempt's outcome; ``trial`` when the caller won ``claim_trial``."""
        entry = self._entry(key)
        if entry.open_until is not None:
            if trial and entry.trial_until is not None:
                if ok:
                    self._close(key)
                    self._share.closed(key)
                    return
                entry.consecutive += 1
                self._open(key, entry, now, "its half-open trial failed")
            return
        entry.window.add(ok, now)
        if ok:
            entry.consecutive = 0
        else:
            entry.consecutive += 1
            cause = self._cause_to_open(entry, now)
            if cause is not None:
                self._open(key, entry, now, cause)
        self._reflag(key, entry)

    def record_probe(self, key: str, ok: bool, *, now: float) -> None:
        """Feed an active probe's outcome; it may reset or degrade, never open or close."""
        del now  # a probe enters no window; kept for a uniform call shape
        entry = self._entry(key)
        entry.last_probe_ok = ok
        if entry.open_until is not None:
            return
        if ok:
            entry.consecutive = 0
        elif entry.consecutive < self._config.degraded_after:
            entry.consecutive += 1
        self._reflag(key, entry)

    def claim_trial(self, key: str, *, now: float) -> bool:
        """True for exactly one caller once the cooldown lapses: it sends the trial.

        False while the breaker is closed (no trial is needed), still cooling down, or
        another trial is in flight and has not yet passed ``trial_timeout``; and, in a
        fleet, until this gateway has won the fleet's trial (the first call asks for it).
        """
        entry = self._entries.get(key)
        if entry is None or entry.open_until is None or now < entry.open_until:
            return False
        if entry.trial_until is not None and now < entry.trial_until:
            return False
        ttl = self._config.trial_timeout.seconds
        fleet = entry.fleet
        if fleet is None or now >= fleet.until:
            if self._share.claim_trial(key, ttl=ttl) == "asking":
                entry.fleet = _FleetTrial("asking", now + ttl)
                return False
        elif fleet.state != "won":
            return False
        entry.fleet = None  # a won claim is spent on this one trial
        entry.trial_until = now + ttl
        return True

    def fleet_trial(self, key: str, *, holder: str | None, remaining: float, now: float) -> None:
        """The fleet's answer to ``claim_trial``: this gateway won (``holder`` None) and
        must send the trial within ``remaining`` seconds, or another gateway holds it for
        ``remaining`` seconds more. An answer nobody waits for any more is dropped."""
        entry = self._entries.get(key)
        if entry is None or entry.fleet is None or entry.fleet.state != "asking":
            return
        if holder is None:
            entry.fleet = _FleetTrial("won", now + remaining)
        else:
            entry.fleet = _FleetTrial("lost", now + remaining, holder)

    def open_remote(
        self,
        key: str,
        *,
        gateway: str,
        remaining: float,
        cooldown: float,
        openings: int,
        cause: str,
        now: float,
    ) -> bool:
        """Another gateway opened ``key``'s breaker for ``cooldown`` seconds, ``remaining``
        of them still to run: it is open here too, unless already open here for longer.
        True when applied. Not handed back to ``share``: the opener has told the fleet."""
        entry = self._entry(key)
        until = now + max(remaining, 0.0)
        if entry.open_until is not None and entry.open_until >= until:
            return False
        entry.open_until = until
        entry.openings = max(entry.openings, openings)
        entry.opened_because = f"{cause}; cooldown {Duration(cooldown)}"
        entry.cause = cause
        entry.opened_by = gateway
        entry.trial_until = None
        entry.fleet = None
        self._flagged.add(key)
        return True

    def own_openings(self, *, now: float) -> list[tuple[str, float, int, str]]:
        """(key, seconds of cooldown left, openings, cause) of each breaker this gateway
        opened itself and that is still cooling down: what the fleet is told again when
        it could not be told at the time (Redis was unreachable)."""
        return [
            (key, entry.open_until - now, entry.openings, entry.cause)
            for key in sorted(self._flagged)
            if (entry := self._entries[key]).open_until is not None
            and entry.opened_by is None
            and entry.open_until > now
        ]

    def close_remote(self, key: str) -> bool:
        """Another gateway's half-open trial of ``key`` succeeded: its breaker closes
        here too (the upstream answers again). True when it was open."""
        entry = self._entries.get(key)
        if entry is None or entry.open_until is None:
            return False
        self._close(key)
        return True

    def state(self, key: str, *, now: float) -> TargetHealth:
        """The target's health as of ``now``; an unseen target is healthy."""
        entry = self._entries.get(key)
        if entry is None:
            return TargetHealth(key=key, status="healthy", reason="no calls recorded yet")
        calls, failures = entry.window.totals(now)
        health = TargetHealth(
            key=key,
            status="healthy",
            reason=closed_reason(calls, failures, entry.consecutive, self._config.window),
            consecutive_failures=entry.consecutive,
            window_calls=calls,
            window_failures=failures,
            openings=entry.openings,
            last_probe_ok=entry.last_probe_ok,
        )
        if entry.open_until is None:
            if entry.consecutive < self._config.degraded_after:
                return health
            reason = (
                f"degraded: {entry.consecutive} consecutive failures "
                f"(degraded from {self._config.degraded_after})"
            )
            return msgspec.structs.replace(health, status="degraded", reason=reason)
        return self._open_state(health, entry, entry.open_until, now)

    def states(self, *, now: float) -> tuple[TargetHealth, ...]:
        """Every known target's health, by key (for ``gw health``)."""
        return tuple(self.state(key, now=now) for key in sorted(self._entries))

    def _open_state(
        self, health: TargetHealth, entry: _Entry, open_until: float, now: float
    ) -> TargetHealth:
        if entry.opened_by is None:
            opened = f"breaker opened: {entry.opened_because}"
        else:  # another gateway's breaker, shared by the fleet (state.redis_url)
            opened = f"breaker opened by gateway {entry.opened_by}, fleet-wide: "
            opened += entry.opened_because
        health = msgspec.structs.replace(health, opened_by=entry.opened_by)
        if now < open_until:
            return msgspec.structs.replace(
                health,
                status="unhealthy",
                breaker="open",
                cooldown_until=open_until,
                reason=f"{opened}; cooling down {open_until - now:.1f}s more "
                f"(opening {entry.openings} in a row)",
            )
        in_flight = entry.trial_until is not None and now < entry.trial_until
        fleet = entry.fleet if entry.fleet is not None and now < entry.fleet.until else None
        trial_until = entry.trial_until if in_flight else None
        holder = None
        if in_flight:
            reason = f"{opened}; half-open, a trial request is in flight"
        elif fleet is not None and fleet.state == "lost":
            holder, trial_until = fleet.holder, fleet.until
            reason = f"{opened}; half-open, gateway {holder} is sending the fleet's trial"
        elif fleet is not None and fleet.state == "asking":
            reason = f"{opened}; half-open, asking the fleet which gateway sends the trial"
        else:
            reason = f"{opened}; half-open, the next request may be let through as a trial"
        return msgspec.structs.replace(
            health,
            status="unhealthy",
            breaker="half_open",
            cooldown_until=open_until,
            trial_available=trial_until is None and (fleet is None or fleet.state == "won"),
            trial_until=trial_until,
            trial_holder=holder,
            reason=reason,
        )

    def _cause_to_open(self, entry: _Entry, now: float) -> str | None:
        config = self._config
        if entry.consecutive >= config.unhealthy_after:
            return f"{entry.consecutive} consecutive failures"
        calls, failures = entry.window.totals(now)
        if calls >= config.min_requests and failures / calls > config.error_rate:
            return (
                f"{failures} of {calls} calls failed in the last {config.window}, "
                f"above the {config.error_rate:.0%} error rate"
            )
        return None

    def _open(self, key: str, entry: _Entry, now: float, cause: str) -> None:
        entry.openings += 1
        doublings = min(entry.openings - 1, _MAX_DOUBLINGS)
        cooldown = min(
            self._config.cooldown.seconds * 2.0**doublings, self._config.max_cooldown.seconds
        )
        entry.open_until = now + cooldown
        entry.opened_because = f"{cause}; cooldown {Duration(cooldown)}"
        entry.cause = cause
        entry.opened_by = None
        entry.trial_until = None
        entry.fleet = None
        self._share.opened(key, cooldown=cooldown, openings=entry.openings, cause=cause)

    def _close(self, key: str) -> None:
        """A trial succeeded: start afresh, keeping only what probes last said."""
        fresh = _Entry(self._config.window.seconds)
        fresh.last_probe_ok = self._entries[key].last_probe_ok
        self._entries[key] = fresh
        self._flagged.discard(key)

    def _reflag(self, key: str, entry: _Entry) -> None:
        if entry.open_until is not None or entry.consecutive >= self._config.degraded_after:
            self._flagged.add(key)
        else:
            self._flagged.discard(key)

    def _entry(self, key: str) -> _Entry:
        entry = self._entries.get(key)
        if entry is None:
            if len(self._entries) >= self._max_targets:
                self._forget_one()
            entry = self._entries[key] = _Entry(self._config.window.seconds)
        return entry

    def _forget_one(self) -> None:
        """Make room: the oldest closed entry goes first, else the oldest of all."""
        victim = next(
            (key for key, entry in self._entries.items() if entry.open_until is None),
            next(iter(self._entries)),
        )
        del self._entries[victim]
        self._flagged.discard(victim)


def closed_reason(calls: int, failures: int, consecutive: int, window: Duration) -> str:
    """A closed breaker's state in words: the window's calls (none, when the window has
    emptied while failures in a row, older than it, still count)."""
    if not calls:
        said = f"closed; no calls in the last {window}"
        return f"{said}; the last {consecutive} calls failed" if consecutive else said
    return f"closed; {failures} of {calls} calls failed in the last {window}"
