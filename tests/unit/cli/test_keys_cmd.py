"""``gw keys`` parsing and rendering: --expires, --models, --allow-ip, and the JSON never
holding a key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from gw.cli.key_budget import budget_from, budget_text, parse_usd
from gw.cli.keys_cmd import parse_allow_ips, parse_expiry, parse_models
from gw.cli.keys_view import allowed_ips_text, created_json, describe, key_json, keys_table
from gw.cli.main import app
from gw.config import load_config
from gw.config.schema import TenantBudget
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
        "id", "key", "tenant", "name", "scopes", "models", "allowed_ips", "prefix", "suffix",
        "created_at", "expires_at", "budget",
    }  # fmt: skip
    assert created["created_at"] == "2026-03-15T14:02:03.000Z"
    listed = key_json(made.key, NOW + 61)
    assert listed["status"] == "expired"
    assert made.plaintext not in json.dumps(listed)
    assert "key" not in listed
    table = keys_table([made.key], NOW)
    assert table.row_count == 1


def test_allow_ip_values_are_normalised_and_none_means_any() -> None:
    assert parse_allow_ips(None) is None
    assert parse_allow_ips([]) is None
    assert parse_allow_ips(["10.0.0.0/8", "127.0.0.1", "::1", "127.0.0.1/32"]) == [
        "10.0.0.0/8",
        "127.0.0.1/32",
        "::1/128",
    ]
    with pytest.raises(typer.BadParameter, match=re.escape("'10.0.0.300' is not an IP address")):
        parse_allow_ips(["10.0.0.0/8", "10.0.0.300"])


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("10.0.0.300", "'10.0.0.300' is not an IP address or CIDR network"),
        ("10.1.2.3/8", "'10.1.2.3/8' has host bits set"),
    ],
)
def test_a_bad_allow_ip_is_a_usage_error_naming_the_value(
    value: str, said: str, tmp_path: Path
) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text("tenants: [{name: team-a}]\n")
    args = ["keys", "create", "--tenant", "team-a", "--config", str(config)]
    result = CliRunner().invoke(
        app, [*args, "--allow-ip", "10.0.0.0/8", "--allow-ip", value],
        env={"GW_HOME": str(tmp_path / "state"), "COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 2
    assert said in " ".join(result.output.split())
    assert "--allow-ip" in result.output
    assert not (tmp_path / "state" / "gw.db").exists()  # refused before any key was made


def test_allow_ip_is_stored_and_listed(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text("tenants: [{name: team-a}]\n")
    env = {"GW_HOME": str(tmp_path / "state")}
    made = CliRunner().invoke(
        app,
        ["keys", "create", "--tenant", "team-a", "--config", str(config), "--json",
         "--allow-ip", " 10.0.0.0/8", "--allow-ip", "2001:db8::1", "--allow-ip", "::ffff:1.2.3.4"],
        env=env,
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    created = json.loads(made.stdout)
    assert created["allowed_ips"] == ["10.0.0.0/8", "2001:db8::1/128", "1.2.3.4/32"]
    listed = CliRunner().invoke(app, ["keys", "list", "--json"], env=env)
    assert json.loads(listed.stdout)[0]["allowed_ips"] == created["allowed_ips"]


def test_the_allowlist_shows_compactly_and_any_when_there_is_none() -> None:
    limited = new_key(
        tenant="team-a", created_at=NOW, allowed_ips=("10.0.0.0/8", "203.0.113.7/32", "::1/128")
    ).key
    anywhere = new_key(tenant="team-a", created_at=NOW).key
    assert allowed_ips_text(limited) == "10.0.0.0/8,203.0.113.7,::1"
    assert allowed_ips_text(anywhere) == "any"
    assert "from 10.0.0.0/8,203.0.113.7,::1," in describe(limited)
    assert "from any address," in describe(anywhere)
    assert key_json(anywhere, NOW)["allowed_ips"] is None
    console = Console(width=300, record=True)
    console.print(keys_table([limited, anywhere], NOW))
    shown = console.export_text()
    header, first, second = shown.splitlines()[:3]
    assert header.split()[4:7] == ["scopes", "models", "ips"]
    assert first.split()[4:7] == ["inference", "any", "10.0.0.0/8,203.0.113.7,::1"]
    assert second.split()[4:7] == ["inference", "any", "any"]


def test_a_key_name_reaches_the_terminal_escaped_and_never_as_markup() -> None:
    named = new_key(tenant="team-a", created_at=NOW, name="ops\x1b[2J[bold]x[/bold]").key
    console = Console(width=300, record=True)
    console.print(keys_table([named], NOW))
    shown = console.export_text()
    assert "\x1b" not in shown
    assert "[bold]x[/bold]" in shown


def test_budget_flags_replace_the_periods_given_and_keep_the_others() -> None:
    base = TenantBudget(daily_usd=1.0, total_usd=50.0)
    changed = budget_from(base, daily="none", weekly="2.5", monthly=None, total=None)
    assert changed == TenantBudget(weekly_usd=2.5, total_usd=50.0)
    assert budget_text(changed) == "$2.50/week, $50.00/total"
    assert budget_text(TenantBudget()) == "none"
    assert parse_usd("--daily-usd", "0") == 0.0  # stops the key's spend: a meaning


@pytest.mark.parametrize("text", ["-1", "five", "nan", "inf"])
def test_a_bad_budget_is_a_usage_error_naming_the_flag(text: str) -> None:
    with pytest.raises(typer.BadParameter, match=f"--total-usd {re.escape(repr(text))}"):
        parse_usd("--total-usd", text)
