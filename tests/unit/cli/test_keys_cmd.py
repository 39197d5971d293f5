"""``gw keys`` parsing and rendering: --expires, --models, and the JSON never holding a key."""

from __future__ import annotations

import json

import pytest

from gw.cli.keys_cmd import parse_expiry, parse_models
from gw.cli.keys_view import created_json, key_json, keys_table
from gw.config import load_config
from gw.store.api_keys import new_key

NOW = 1_773_583_323.0  # 2026-03-15T14:02:03Z
CONFIG = load_config(
    "providers: [{name: mock, kind: mock}]\n"
    "routes: [{name: chat, targets: [{provider: mock, model: m}]}]\n"
    "tenants: [{name: team-a}]\n",
    "gw.yaml",
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1s", NOW + 1),
        ("90m", NOW + 5400),
        ("30d", NOW + 30 * 86400),
        ("2w", NOW + 14 * 86400),
        ("2026-12-31", 1798675200.0),
        ("2026-12-31T18:00:00Z", 1798740000.0),
        ("2026-12-31T20:00:00+02:00", 1798740000.0),
        ("2000-01-01", 946684800.0),  # in the past: allowed (the key is born expired)
    ],
)
def test_expiry(text: str, expected: float) -> None:
    assert parse_expiry(text, NOW) == expected


def test_a_bad_expiry_says_what_to_write() -> None:
    with pytest.raises(ValueError, match="30d"):
        parse_expiry("tomorrow", NOW)


def test_models_are_routes_or_provider_slash_model() -> None:
    assert parse_models(None, CONFIG) is None
    assert parse_models("chat, mock/other,chat", CONFIG) == ("chat", "mock/other")
    with pytest.raises(ValueError, match="'ghost' is neither a route"):
        parse_models("chat,ghost", CONFIG)
    with pytest.raises(ValueError, match="neither a route"):
        parse_models("nobody/m", CONFIG)
    with pytest.raises(ValueError, match="lists no model"):
        parse_models(",", CONFIG)


def test_only_create_shows_the_key() -> None:
    made = new_key(tenant="team-a", created_at=NOW, expires_at=NOW + 60, models=("chat",))
    created = created_json(made)
    assert created["key"] == made.plaintext
    assert set(created) == {
        "id", "key", "tenant", "name", "scopes", "models", "prefix", "suffix", "created_at", "expires_at",
    }  # fmt: skip
    assert created["created_at"] == "2026-03-15T14:02:03.000Z"
    listed = key_json(made.key, NOW + 61)
    assert listed["status"] == "expired"
    assert made.plaintext not in json.dumps(listed)
    assert "key" not in listed
    table = keys_table([made.key], NOW)
    assert table.row_count == 1
