"""The ``auth:`` section's dashboard login link lifetime: default, units and bounds."""

from __future__ import annotations

import pytest

from gw.config import ConfigError, load_config


def test_a_login_link_works_for_a_minute_by_default() -> None:
    assert load_config("", "gw.yaml").auth.dashboard_link_ttl.seconds == 60.0
    auth = load_config("auth:\n  dashboard_link_ttl: 5m\n", "gw.yaml").auth
    assert auth.dashboard_link_ttl.seconds == 300.0


@pytest.mark.parametrize("value", ["0s", "2h"])
def test_a_login_link_lives_more_than_0s_and_at_most_an_hour(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(f"auth:\n  dashboard_link_ttl: {value}\n", "gw.yaml")
    assert caught.value.path == "auth.dashboard_link_ttl"
    assert "at most 1h" in caught.value.reason
    assert caught.value.line == 2
