"""The ``state:`` section: defaults, units (``7d``), and refused zero durations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gw.config import ConfigError, load_config
from gw.config.schema import StateConfig
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
