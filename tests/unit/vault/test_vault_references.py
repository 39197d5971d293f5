"""``vault:NAME`` references: the resolver reads the vault it was given; the server opens
the vault once at start, only when the config refers to it, and fails clearly when it
cannot."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gw.adapters.secrets import SecretResolver, vault_references
from gw.config import ConfigError, load_config
from gw.errors import UpstreamAuthFailedError
from gw.startup.checks import load_vault, resolve_admin_key
from gw.startup.plan import ServeError, ServePlan
from gw.startup.reloading import refresh_vault
from gw.vault import Identity, Secrets, Vault

SECRET = "sk-reference-0123456789"
CONFIG = """
auth: {admin_key: vault:admin}
providers:
  - {name: one, kind: openai, base_url: "http://127.0.0.1:9/v1", api_key: vault:openai}
  - name: pool
    kind: openai
    base_url: "http://127.0.0.1:9/v1"
    api_key: env:POOL_KEY
    accounts: [{name: a}, {name: b, api_key: vault:pool-b}]
routes:
  - {name: chat, targets: [{provider: one, model: m}]}
"""
ENV_ONLY = """
providers:
  - {name: one, kind: openai, base_url: "http://127.0.0.1:9/v1", api_key: env:OPENAI_API_KEY}
"""


def test_a_vault_reference_resolves_from_the_vault() -> None:
    resolver = SecretResolver({}, Secrets({"openai": SECRET}))
    assert resolver.resolve("vault:openai", field="provider one api_key") == SECRET


def test_an_unknown_name_names_the_field_and_the_command() -> None:
    resolver = SecretResolver({}, Secrets({"openai": SECRET}))

    with pytest.raises(UpstreamAuthFailedError) as caught:
        resolver.resolve("vault:anthropic", field="provider claude api_key")

    message = caught.value.message
    assert "provider claude api_key is vault:anthropic" in message
    assert "`gw vault set anthropic`" in message
    assert SECRET not in message
    assert caught.value.blame == "gateway"


def test_a_vault_reference_without_a_vault_says_how_to_make_one() -> None:
    with pytest.raises(UpstreamAuthFailedError, match="gw vault init"):
        SecretResolver({}).resolve("vault:openai", field="provider one api_key")


def test_the_config_s_vault_references_are_found_in_every_field() -> None:
    config = load_config(CONFIG, "gw.yaml")
    assert vault_references(config) == {
        "auth.admin_key": "admin",
        "providers[0].api_key": "openai",
        "providers[1].accounts[1].api_key": "pool-b",
    }


def plan(home: Path, text: str, environ: dict[str, str] | None = None) -> ServePlan:
    config = load_config(text, "gw.yaml")
    return ServePlan(home=home, config=config, source="gw.yaml", environ=environ or {})


def test_a_config_without_vault_references_never_opens_the_vault(tmp_path: Path) -> None:
    assert load_vault(plan(tmp_path / "nowhere", ENV_ONLY)) is None


def test_start_up_fails_clearly_when_the_vault_cannot_be_opened(tmp_path: Path) -> None:
    with pytest.raises(ServeError) as caught:
        load_vault(plan(tmp_path / "state", CONFIG))

    message = str(caught.value)
    assert "providers[0].api_key is vault:openai" in message
    assert "auth.admin_key is vault:admin" in message
    assert "no vault at" in message
    assert "gw vault init" in message


def test_the_server_reads_the_vault_and_resolves_the_admin_key(tmp_path: Path) -> None:
    home = tmp_path / "state"
    environ = {"GW_VAULT_KEY": Identity.generate().secret_text()}
    vault = Vault(home, environ)
    vault.init()
    vault.set("openai", SECRET)
    vault.set("admin", "gw-admin-0123456789abcdef")
    serve_plan = plan(home, CONFIG, environ)

    secrets = load_vault(serve_plan)

    assert secrets is not None
    assert secrets["openai"] == SECRET
    assert SECRET not in repr(secrets)
    assert resolve_admin_key(serve_plan.config, environ, secrets) == "gw-admin-0123456789abcdef"


def test_an_admin_key_missing_from_the_vault_stops_start_up(tmp_path: Path) -> None:
    config = load_config(CONFIG, "gw.yaml")
    with pytest.raises(ServeError, match="gw vault set admin"):
        resolve_admin_key(config, {}, Secrets({"openai": SECRET}))


class Directory:
    """The part of AdapterDirectory a reload talks to."""

    def __init__(self) -> None:
        self.vault: object = None

    def use_vault(self, vault: object) -> None:
        self.vault = vault


def test_a_reload_reads_the_vault_again_and_refuses_a_missing_name(tmp_path: Path) -> None:
    home = tmp_path / "state"
    environ = {"GW_VAULT_KEY": Identity.generate().secret_text()}
    vault = Vault(home, environ)
    vault.init()
    vault.set("openai", SECRET)
    vault.set("admin", "gw-admin-0123456789abcdef")
    serve_plan = plan(home, CONFIG, environ)
    directory = Directory()

    with pytest.raises(ConfigError) as caught:  # vault:pool-b is not in the vault yet
        asyncio.run(refresh_vault(serve_plan, directory, serve_plan.config))  # type: ignore[arg-type]
    assert "providers[1].accounts[1].api_key" in str(caught.value)
    assert "gw vault set pool-b" in str(caught.value)
    assert directory.vault is None

    vault.set("pool-b", "sk-pool-b-0123456789")  # then the edit is saved again
    asyncio.run(refresh_vault(serve_plan, directory, serve_plan.config))  # type: ignore[arg-type]
    resolver = SecretResolver({}, directory.vault)
    assert resolver.resolve("vault:pool-b", field="f") == "sk-pool-b-0123456789"
