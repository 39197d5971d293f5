"""The ``server:`` section's time limits: defaults, units, and errors naming the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gw.config import ConfigError, load_config
from gw.config.schema import ServerConfig
from gw.config.units import Duration

CONFIG_GUIDE = Path(__file__).parents[3] / "docs" / "guides" / "configuration.md"


def test_default_time_limits() -> None:
    server = load_config("", "gw.yaml").server
    assert server.header_timeout == Duration(10.0)
    assert server.body_timeout == Duration(30.0)


def test_header_timeout_takes_a_duration() -> None:
    server = load_config("server:\n  header_timeout: 500ms\n", "gw.yaml").server
    assert server.header_timeout.seconds == 0.5


def test_the_configuration_guide_shows_the_built_in_defaults() -> None:
    reference = CONFIG_GUIDE.read_text(encoding="utf-8")
    block = reference.split("```yaml\n", 1)[1].split("```", 1)[0]
    section = re.search(r"^server:.*\n(?:  .*\n)+", block, re.MULTILINE)
    assert section is not None, "docs/guides/configuration.md has no server: section"
    assert "header_timeout:" in section.group(0)
    assert load_config(section.group(0), "configuration.md").server == ServerConfig()


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("header_timeout: 0s", "must be longer than 0s"),
        ("header_timeout: 0", "must be longer than 0s"),
        ("header_timeout: -1s", "is not a duration"),
        ("header_timeout: soon", "is not a duration"),
    ],
)
def test_header_timeout_errors_name_the_field_and_line(body: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(f"auth: {{}}\nserver:\n  {body}\n", "gw.yaml")
    assert caught.value.path == "server.header_timeout"
    assert reason in caught.value.reason
    assert caught.value.line == 3


def test_the_retired_aiohttp_transport_is_refused_naming_the_alternatives() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config("auth: {}\nserver:\n  upstream_transport: aiohttp\n", "gw.yaml")
    assert (caught.value.path, caught.value.line) == ("server.upstream_transport", 3)
    assert "aiohttp is no longer one of gw's upstream clients" in caught.value.reason
    assert "use builtin (the default) or httpx" in caught.value.reason


@pytest.mark.parametrize("transport", ["builtin", "httpx"])
def test_the_upstream_transports_gw_offers(transport: str) -> None:
    server = load_config(f"server: {{upstream_transport: {transport}}}\n", "gw.yaml").server
    assert server.upstream_transport == transport
