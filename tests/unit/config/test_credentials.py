"""Which providers have no usable credentials and which routes fall through because of it
(gw/config/credentials.py), from the config, an environment and a vault's names alone."""

from __future__ import annotations

import pytest

from gw.config.credentials import CredentialGap, FallThrough, check_credentials
from gw.config.loader import load_config
from gw.config.schema import Config

CONFIG = """
providers:
  - {name: openai, kind: openai, api_key: env:OPENAI_API_KEY}
  - {name: claude, kind: anthropic, api_key: vault:ANTHROPIC}
  - {name: local, kind: openai_compatible, base_url: "http://127.0.0.1:11434/v1"}
  - {name: mock, kind: mock}
routes:
  - name: chat
    targets:
      - {provider: openai, model: gpt-4o-mini, priority: 1}
      - {provider: local, model: llama3.2, priority: 2}
      - {provider: mock, model: mock-1, priority: 3}
  - name: deep
    targets:
      - {provider: local, model: llama3.2, priority: 1}
      - {provider: claude, model: claude-x, priority: 2}
  - name: only-openai
    targets: [{provider: openai, model: gpt-4o}]
  - name: spread
    strategy: weighted
    targets: [{provider: openai, model: gpt-4o}, {provider: mock, model: mock-1}]
"""


def load(text: str) -> Config:
    return load_config(text, "gw.yaml")


def test_every_credential_present_reports_nothing() -> None:
    report = check_credentials(load(CONFIG), {"OPENAI_API_KEY": "sk-1"}, {"ANTHROPIC"})
    assert (report.gaps, report.unusable, report.falls_through) == ((), (), ())
    assert report.warnings() == []


def test_a_missing_env_key_and_vault_secret_name_the_field_and_the_routes_that_fall_through() -> (
    None
):
    report = check_credentials(load(CONFIG), {"OPENAI_API_KEY": ""}, set())
    assert report.gaps == (
        CredentialGap(
            provider="openai",
            account=None,
            field="providers[0].api_key",
            reason="providers[0].api_key is env:OPENAI_API_KEY, and OPENAI_API_KEY is not set",
        ),
        CredentialGap(
            provider="claude",
            account=None,
            field="providers[1].api_key",
            reason="providers[1].api_key is vault:ANTHROPIC, and the vault has no ANTHROPIC",
        ),
    )
    assert report.unusable == ("openai", "claude")
    chat, deep, only, spread_openai = report.falls_through
    assert chat == FallThrough(
        route="chat",
        strategy="priority",
        target="openai/gpt-4o-mini",
        first=True,
        next=("local/llama3.2", "mock/mock-1"),
    )
    assert (deep.target, deep.first) == ("claude/claude-x", False)  # a fallback lost, not a fall
    assert (only.route, only.next) == ("only-openai", ())
    assert (spread_openai.route, spread_openai.first) == ("spread", True)
    warnings = report.warnings()
    assert warnings == [
        "provider openai has no usable credentials: providers[0].api_key is "
        "env:OPENAI_API_KEY, and OPENAI_API_KEY is not set",
        "provider claude has no usable credentials: providers[1].api_key is vault:ANTHROPIC,"
        " and the vault has no ANTHROPIC",
        "route chat: its first target openai/gpt-4o-mini cannot work (no usable credentials),"
        " so its requests fall through to local/llama3.2, mock/mock-1",
        "route only-openai: its first target openai/gpt-4o cannot work (no usable "
        "credentials), and neither can any other: every request to it fails",
        "route spread: its target openai/gpt-4o cannot work (no usable credentials), so the "
        "requests that pick it fall through to mock/mock-1",
    ]


@pytest.mark.parametrize(
    ("vault_error", "said"),
    [
        (None, "there is no vault: run `gw vault init` and `gw vault set ANTHROPIC`"),
        ("no identity", "the vault cannot be opened: no identity"),
    ],
)
def test_a_vault_that_was_not_opened_says_why(vault_error: str | None, said: str) -> None:
    config = load(CONFIG)
    report = check_credentials(config, {"OPENAI_API_KEY": "k"}, None, vault_error=vault_error)
    assert [gap.reason for gap in report.gaps] == [
        f"providers[1].api_key is vault:ANTHROPIC, and {said}"
    ]


AZURE = "{name: p, kind: azure_openai, base_url: 'https://x.openai.azure.com', headers: "


@pytest.mark.parametrize(
    ("provider", "environ", "unusable"),
    [
        ("{name: p, kind: openai}", {}, True),  # OpenAI refuses calls without a key
        ("{name: p, kind: gemini}", {}, True),
        ("{name: p, kind: openai_compatible, base_url: 'https://api.example.com/v1'}", {}, False),
        ("{name: p, kind: openai, base_url: 'http://10.0.0.5:8000/v1'}", {}, False),  # local
        (AZURE + "{Authorization: env:AZURE_TOKEN}}", {}, True),  # its header is the key
        (AZURE + "{Authorization: env:AZURE_TOKEN}}", {"AZURE_TOKEN": "Bearer t"}, False),
    ],
)
def test_a_key_is_required_where_the_kind_always_needs_one(
    provider: str, environ: dict[str, str], unusable: bool
) -> None:
    report = check_credentials(load(f"providers: [{provider}]\n"), environ, None)
    assert (report.unusable == ("p",)) is unusable


def test_an_account_without_credentials_is_named_while_the_others_serve() -> None:
    config = load(
        """
providers:
  - name: openai
    kind: openai
    api_key: env:KEY_A
    accounts:
      - {name: a}
      - {name: b, api_key: env:KEY_B}
"""
    )
    report = check_credentials(config, {"KEY_A": "sk-a"}, None)
    assert report.unusable == ()
    assert [(g.account, g.field) for g in report.gaps] == [
        ("b", "providers[0].accounts[1].api_key")
    ]
    assert report.warnings() == [
        "provider openai account b: providers[0].accounts[1].api_key is env:KEY_B, and KEY_B"
        " is not set; its other accounts are used"
    ]
    none = check_credentials(config, {}, None)
    assert none.unusable == ("openai",)
