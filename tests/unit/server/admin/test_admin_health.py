"""The admin health report: clocks converted, targets listed and ordered, locks per
account, admin scope; built from real books driven with plain numbers."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from gw.config import Snapshot, compile_snapshot, load_config
from gw.config.schema import HealthConfig
from gw.config.units import Duration
from gw.errors import AuthenticationFailedError, PermissionDeniedError, RateLimitedError
from gw.execution.accounts import AccountBook
from gw.execution.health import HealthBook
from gw.execution.latency import LatencyAverage, LatencyBook
from gw.server.admin.api import Now, health_report, target_routes
from gw.server.auth import ANONYMOUS, Authenticator, Principal, require_scope

CONFIG = """
providers:
  - name: a
    kind: openai_compatible
    base_url: http://127.0.0.1:1/v1
    api_key: env:A_KEY
    headers: {x-secret: env:A_SECRET}
    accounts: [{name: one}, {name: two, api_key: env:A_TWO}]
  - {name: b, kind: mock}
routes:
  - name: chat
    targets: [{provider: a, model: m1, priority: 1}, {provider: b, model: m2, priority: 2}]
  - name: other
    targets: [{provider: b, model: m2}]
"""
HEALTH = HealthConfig(
    degraded_after=1,
    unhealthy_after=2,
    error_rate=1.0,
    cooldown=Duration(60),
    max_cooldown=Duration(60),
    rate_limit_cooldown=Duration(30),
)
NOW = Now(wall=1_773_583_323.0, mono=1000.0)


def snapshot() -> Snapshot:
    return compile_snapshot(load_config(CONFIG, "t.yaml"), revision=7, source="t")


def test_monotonic_deadlines_become_wall_clock_times() -> None:
    assert NOW.to_wall(1030.5) == 1_773_583_353.5
    assert NOW.remaining(1030.5) == 30.5
    assert NOW.remaining(990.0) == 0.0  # a lapsed deadline is never negative
    assert NOW.to_wall(990.0) == 1_773_583_313.0


def test_route_targets_come_first_in_config_order_then_others_by_name() -> None:
    routes = target_routes(snapshot(), ["z/direct", "a/m1", "b/other"])
    assert routes == {
        "a/m1": ("chat",),
        "b/m2": ("chat", "other"),
        "b/other": (),
        "z/direct": (),
    }


def test_latency_averages_per_target() -> None:
    book = LatencyBook()
    assert book.averages() == {}
    book.record("a/m1", 100.0, streaming=False)
    book.record("a/m1", 20.0, streaming=True)
    book.record("b/m2", 50.0, streaming=True)
    assert book.averages() == {
        "a/m1": LatencyAverage(total_ms=100.0, ttft_ms=20.0, samples=2),
        "b/m2": LatencyAverage(total_ms=None, ttft_ms=50.0, samples=1),
    }


def test_an_open_breaker_a_lock_and_latency_are_reported() -> None:
    health, latency, accounts = HealthBook(HEALTH), LatencyBook(), AccountBook(HEALTH)
    health.record("a/m1", False, now=990.0)
    health.record("a/m1", False, now=995.0)  # opens: cooldown until 1055
    latency.record("b/m2", 12.34, streaming=False)
    accounts.lock_after("a", "one", "m1", RateLimitedError("429", retry_after=20), now=995.0)

    report = health_report(snapshot(), health=health, latency=latency, accounts=accounts, now=NOW)

    assert report.now == NOW.wall
    assert report.revision == 7
    broken, fine = report.targets
    assert (broken.provider, broken.model, broken.routes) == ("a", "m1", ("chat",))
    assert broken.status == "unhealthy"
    assert broken.breaker == "open"
    assert broken.reason.startswith("breaker opened: 2 consecutive failures")
    assert broken.cooldown_until == NOW.wall + 55.0
    assert broken.cooldown_remaining_s == 55.0
    assert broken.consecutive_failures == 2
    assert broken.openings == 1
    assert broken.latency is None
    assert fine.status == "healthy"
    assert fine.reason == "no calls recorded yet"
    assert fine.cooldown_until is None
    assert fine.cooldown_remaining_s is None
    assert fine.latency is not None
    assert (fine.latency.total_ms, fine.latency.ttft_ms, fine.latency.samples) == (12.3, None, 1)

    rows = {(row.provider, row.account): row.locks for row in report.accounts}
    assert list(rows) == [("a", "one"), ("a", "two"), ("b", "default")]
    (lock,) = rows[("a", "one")]
    assert (lock.model, lock.locked_until, lock.remaining_s) == ("m1", NOW.wall + 15.0, 15.0)
    assert "rate limited" in lock.reason
    assert rows[("a", "two")] == ()


def test_a_target_with_every_account_locked_reads_unhealthy() -> None:
    accounts = AccountBook(HEALTH)
    for name in ("one", "two"):
        accounts.lock_after("a", name, "m1", RateLimitedError("429"), now=NOW.mono)
    report = health_report(
        snapshot(), health=HealthBook(HEALTH), latency=None, accounts=accounts, now=NOW
    )
    locked = report.targets[0]
    assert locked.status == "unhealthy"
    assert locked.breaker == "closed"
    assert locked.reason.startswith("every account is locked")


def test_a_half_open_breaker_shows_its_trial() -> None:
    health = HealthBook(HEALTH)
    health.record("a/m1", False, now=900.0)
    health.record("a/m1", False, now=900.0)  # cooldown until 960, lapsed at NOW
    assert health.claim_trial("a/m1", now=NOW.mono)
    report = health_report(snapshot(), health=health, latency=None, accounts=None, now=NOW)
    trial = report.targets[0]
    assert trial.breaker == "half_open"
    assert trial.trial_in_flight is True
    assert trial.cooldown_remaining_s == 0.0


def test_without_books_every_route_target_is_listed_untracked() -> None:
    report = health_report(snapshot(), health=None, latency=None, accounts=None, now=NOW)
    assert [(t.provider, t.model, t.status) for t in report.targets] == [
        ("a", "m1", "healthy"),
        ("b", "m2", "healthy"),
    ]
    assert all(not row.locks for row in report.accounts)


def test_the_report_carries_no_credential_url_or_header() -> None:
    report = health_report(snapshot(), health=None, latency=None, accounts=None, now=NOW)
    text = msgspec.json.encode(report).decode()
    for secret in ("A_KEY", "A_TWO", "127.0.0.1", "x-secret", "A_SECRET"):
        assert secret not in text


def test_admin_scope() -> None:
    require_scope(ANONYMOUS, "admin")  # open mode: everyone (loopback only)
    keys = Authenticator("keys", "adm1n")
    require_scope(asyncio.run(keys.authenticate({"authorization": "Bearer adm1n"})), "admin")
    with pytest.raises(AuthenticationFailedError):
        asyncio.run(keys.authenticate({}))
    with pytest.raises(PermissionDeniedError, match="'admin' scope"):  # an app's API key
        require_scope(Principal(key_id="key_123", tenant="team-a", scopes=("inference",)), "admin")
    require_scope(Principal(key_id="key_123", tenant="team-a", scopes=("admin",)), "admin")
