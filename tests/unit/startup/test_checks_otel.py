"""``telemetry.otlp.headers`` references at start (gw/startup/checks.py ``check_otel``): ``env:NAME``
and ``vault:NAME`` are resolved, a literal is sent as written, a vault reference makes
the vault be opened, and one that does not resolve refuses the start naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from gw.adapters.secrets import vault_references
from gw.config import load_config
from gw.startup.checks import check_otel, load_vault
from gw.startup.plan import ServeError, ServePlan
from gw.vault import Identity, OsKeyring, Vault

TEAM_KEY = "hcaik_env0secret0value0123"
VAULT_TOKEN = "Bearer glc_vault0secret0value0456"


def config_text(headers: str, *, enabled: bool = True) -> str:
    return (
        "telemetry:\n"
        "  otlp:\n"
        f"    enabled: {'true' if enabled else 'false'}\n"
        "    endpoint: http://127.0.0.1:4318\n"
        f"    headers: {headers}\n"
    )


def plan(home: Path, text: str, environ: dict[str, str] | None = None) -> ServePlan:
    return ServePlan(
        home=home, config=load_config(text, "gw.yaml"), source="gw.yaml", environ=environ or {}
    )


def make_vault(home: Path, **secrets: str) -> dict[str, str]:
    """A vault in ``home`` holding ``secrets``; the environment that opens it."""
    environ = {"GW_VAULT_KEY": Identity.generate().secret_text()}
    vault = Vault(home, environ, lambda: OsKeyring.disabled("no keyring in unit tests"))
    vault.init()
    for name, value in secrets.items():
        vault.set(name, value)
    return environ


def test_env_references_are_resolved_and_literals_kept(tmp_path: Path) -> None:
    headers = "{x-honeycomb-team: 'env:HC_KEY', x-honeycomb-dataset: gw}"
    serve_plan = plan(tmp_path / "nowhere", config_text(headers), {"HC_KEY": TEAM_KEY})
    assert check_otel(serve_plan) == {"x-honeycomb-team": TEAM_KEY, "x-honeycomb-dataset": "gw"}
    assert load_vault(serve_plan) is None  # no vault reference: the vault is never opened


def test_an_unset_variable_refuses_the_start_naming_the_field(tmp_path: Path) -> None:
    serve_plan = plan(tmp_path, config_text("{x-honeycomb-team: 'env:HC_KEY'}"), {"OTHER": "x"})
    with pytest.raises(ServeError) as caught:
        check_otel(serve_plan)
    message = str(caught.value)
    assert "telemetry.otlp.headers.x-honeycomb-team is env:HC_KEY" in message
    assert "HC_KEY is not set" in message


def test_a_vault_reference_opens_the_vault_and_resolves(tmp_path: Path) -> None:
    home = tmp_path / "state"
    environ = make_vault(home, **{"grafana-otlp": VAULT_TOKEN})
    serve_plan = plan(home, config_text("{Authorization: 'vault:grafana-otlp'}"), environ)

    assert vault_references(serve_plan.config) == {
        "telemetry.otlp.headers.Authorization": "grafana-otlp"
    }
    secrets = load_vault(serve_plan)  # what `gw serve` reads at start, before anything else
    assert secrets is not None
    assert secrets["grafana-otlp"] == VAULT_TOKEN
    assert check_otel(serve_plan) == {"Authorization": VAULT_TOKEN}


def test_a_name_missing_from_the_vault_refuses_the_start(tmp_path: Path) -> None:
    home = tmp_path / "state"
    environ = make_vault(home, other="x")
    serve_plan = plan(home, config_text("{Authorization: 'vault:grafana-otlp'}"), environ)
    with pytest.raises(ServeError) as caught:
        check_otel(serve_plan)
    message = str(caught.value)
    assert "telemetry.otlp.headers.Authorization is vault:grafana-otlp" in message
    assert "gw vault set grafana-otlp" in message


def test_a_vault_reference_without_a_vault_refuses_the_start(tmp_path: Path) -> None:
    serve_plan = plan(tmp_path / "state", config_text("{Authorization: 'vault:grafana-otlp'}"))
    with pytest.raises(ServeError) as caught:
        check_otel(serve_plan)
    message = str(caught.value)
    assert "telemetry.otlp.headers.Authorization is vault:grafana-otlp" in message
    assert "cannot be opened" in message


def test_export_off_resolves_nothing(tmp_path: Path) -> None:
    text = config_text("{Authorization: 'vault:gone', x-team-key: 'env:UNSET'}", enabled=False)
    assert check_otel(plan(tmp_path / "nowhere", text)) == {}
