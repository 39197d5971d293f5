"""``tenants[].limits``, ``tenants[].budget`` and ``policies[].timeout``: values that can
only break requests (a negative budget, a rate of no requests, a timeout of no time) are
refused at load, naming the file, line, field and reason."""

from __future__ import annotations

import pytest

from gw.config import ConfigError, load_config

TENANT = "tenants:\n  - name: t\n    {body}\n"
POLICY = "policies:\n  - name: p\n    {body}\n"


@pytest.mark.parametrize(
    ("text", "path", "reason"),
    [
        (TENANT.format(body="budget: {daily_usd: -1}"), "tenants[0].budget.daily_usd", "must not be negative"),
        (TENANT.format(body="budget: {monthly_usd: -0.01}"), "tenants[0].budget.monthly_usd", "must not be negative"),
        (TENANT.format(body="limits: {requests_per_minute: -5}"), "tenants[0].limits.requests_per_minute", "must be at least 1"),
        (TENANT.format(body="limits: {requests_per_minute: 0}"), "tenants[0].limits.requests_per_minute", "must be at least 1"),
        (TENANT.format(body="limits: {tokens_per_minute: 0}"), "tenants[0].limits.tokens_per_minute", "must be at least 1"),
        (TENANT.format(body="limits: {max_concurrency: -1}"), "tenants[0].limits.max_concurrency", "must be at least 1"),
        (POLICY.format(body="timeout: {total: 0s}"), "policies[0].timeout.total", "must be longer than 0s"),
        (POLICY.format(body="timeout: {per_attempt: 0}"), "policies[0].timeout.per_attempt", "must be longer than 0s"),
        (POLICY.format(body="timeout: {connect: 0ms}"), "policies[0].timeout.connect", "must be longer than 0s"),
        (POLICY.format(body="timeout: {first_token: 0s}"), "policies[0].timeout.first_token", "must be longer than 0s"),
        (POLICY.format(body="timeout: {stream_idle: 0s}"), "policies[0].timeout.stream_idle", "must be longer than 0s"),
    ],
)  # fmt: skip
def test_a_value_that_cannot_work_is_refused_naming_file_line_and_field(
    text: str, path: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(text, "gw.yaml")
    assert caught.value.path == path
    assert reason in caught.value.reason
    assert caught.value.line == 3  # the line of the section that holds the value
    assert str(caught.value) == f"gw.yaml:3: {path}: {caught.value.reason}"


def test_a_negative_timeout_is_not_a_duration() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(POLICY.format(body="timeout: {total: -5s}"), "gw.yaml")
    assert caught.value.path == "policies[0].timeout.total"
    assert "is not a duration" in caught.value.reason


def test_the_smallest_working_values_load() -> None:
    """A zero budget stops all spend (every request 402), which is a meaning; one request
    a minute and the shortest timeouts are limits, not refusals."""
    text = (
        "tenants:\n  - name: t\n    budget: {daily_usd: 0, monthly_usd: 0}\n"
        "    limits: {requests_per_minute: 1, tokens_per_minute: 1, max_concurrency: 1}\n"
        "policies:\n  - name: p\n"
        "    timeout: {total: 1ms, per_attempt: 1ms, connect: 1ms, first_token: 1ms, stream_idle: 1ms}\n"
    )
    config = load_config(text, "gw.yaml")
    tenant = config.tenants[0]
    assert (tenant.budget.daily_usd, tenant.budget.monthly_usd) == (0, 0)
    assert tenant.limits.max_concurrency == 1
    assert config.policies[0].timeout.total.seconds == 0.001
