"""The ``state:`` section: defaults, units (``7d``), refused zero durations, the fleet URLs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gw.config import ConfigError, load_config
from gw.config.redact import redacted_json
from gw.config.schema import StateConfig
from gw.config.state_url import safe_url
from gw.config.units import ByteSize, Duration

CONFIG_GUIDE = Path(__file__).parents[3] / "docs" / "guides" / "configuration.md"


def test_defaults_when_the_section_is_absent() -> None:
    state = load_config("", "gw.yaml").state
    assert state == StateConfig()
    assert state.trace_max_age == Duration(7 * 86_400)
    assert state.trace_max_bytes == ByteSize(256 * 1024 * 1024)
    assert state.prune_interval == Duration(300)
    assert state.usage_max_age is None  # usage rows are kept for ever unless asked


def test_values_are_read_with_units() -> None:
    text = "state: {trace_max_age: 2d, trace_max_bytes: 64MiB, prune_interval: 30s}\n"
    state = load_config(text, "gw.yaml").state
    assert state.trace_max_age.seconds == 2 * 86_400
    assert str(state.trace_max_age) == "2d"
    assert state.trace_max_bytes.bytes == 64 * 1024 * 1024
    assert state.prune_interval.seconds == 30
    assert load_config("state: {usage_max_age: 400d}\n", "gw.yaml").state.usage_max_age == (
        Duration(400 * 86_400)
    )
    assert load_config("state: {usage_max_age: null}\n", "gw.yaml").state.usage_max_age is None


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("state: {trace_max_age: 0s}\n", "state.trace_max_age"),
        ("state: {prune_interval: 0}\n", "state.prune_interval"),
        ("state: {usage_max_age: 0s}\n", "gw.yaml:1: state.usage_max_age: must be longer"),
        ("state: {usage_max_age: soon}\n", "gw.yaml:1: state.usage_max_age: 'soon' is not a"),
        ("state: {trace_max_bytes: 0}\n", "state.trace_max_bytes"),
        ("state: {keep_usage: false}\n", "state"),
    ],
)
def test_bad_values_are_refused_with_their_field(text: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(text, "gw.yaml")
    assert field in str(caught.value)


def test_the_configuration_guide_shows_the_built_in_defaults() -> None:
    reference = CONFIG_GUIDE.read_text(encoding="utf-8")
    block = reference.split("```yaml\n", 1)[1].split("```", 1)[0]
    section = re.search(r"^state:.*\n(?:  .*\n)+", block, re.MULTILINE)
    assert section is not None, "docs/guides/configuration.md has no state: section"
    assert load_config(section.group(0), "configuration.md").state == StateConfig()


def test_a_fleet_names_postgresql_and_redis_by_url() -> None:
    text = "state: {url: 'postgresql://gw@db:5432/gw', redis_url: 'redis://cache:6379/0'}\n"
    state = load_config(text, "gw.yaml").state
    assert state.url == "postgresql://gw@db:5432/gw"
    assert state.redis_url == "redis://cache:6379/0"
    for url in ("postgres://db/gw", "postgresql://gw@/gw?host=/run/postgresql"):
        assert load_config(f"state: {{url: '{url}'}}\n", "gw.yaml").state.url == url
    for url in ("rediss://cache:6380", "unix:///run/redis.sock"):
        assert load_config(f"state: {{redis_url: '{url}'}}\n", "gw.yaml").state.redis_url == url


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("state: {url: 'mysql://db/gw'}\n", "gw.yaml:1: state.url: must start with postgres://"),
        ("state: {url: 'postgresql://db:port/gw'}\n", "state.url: is not a URL"),
        ("state: {url: 'postgresql:///gw'}\n", "state.url: names no host"),
        ("state: {redis_url: 'http://cache'}\n", "state.redis_url: must start with redis://"),
    ],
)
def test_a_url_gw_cannot_use_is_refused_at_load(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(text, "gw.yaml")
    assert message in str(caught.value)


def test_passwords_in_state_urls_are_hidden_wherever_the_config_is_shown() -> None:
    text = "state: {url: 'postgresql://gw:s3cret@db/gw', redis_url: 'redis://:pw2@cache/0'}\n"
    shown = redacted_json(load_config(text, "gw.yaml"))
    assert "s3cret" not in shown
    assert "pw2" not in shown
    assert "postgresql://gw:***@db/gw" in shown
    assert "redis://:***@cache/0" in shown
    assert safe_url("postgresql://gw@db/gw") == "postgresql://gw@db/gw"
