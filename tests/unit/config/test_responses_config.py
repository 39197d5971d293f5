"""The ``responses:`` section: background responses off by default, its limits checked
with their path, and the configuration guide (docs/guides/configuration.md) showing the defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gw.config import ConfigError, load_config
from gw.config.schema import ResponsesConfig
from gw.config.units import Duration

CONFIG_GUIDE = Path(__file__).parents[3] / "docs" / "guides" / "configuration.md"


def test_background_responses_are_off_unless_asked_for() -> None:
    background = load_config("", "gw.yaml").responses.background
    assert (background.enabled, background.max_queued_per_tenant) == (False, 16)
    assert (background.retention, background.concurrency) == (Duration(3600), 4)
    text = "responses: {background: {enabled: true, retention: 10m, concurrency: 2}}\n"
    background = load_config(text, "gw.yaml").responses.background
    assert (background.enabled, background.retention.seconds, background.concurrency) == (
        True,
        600,
        2,
    )


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (
            "responses: {background: {max_queued_per_tenant: 0}}\n",
            "responses.background.max_queued_per_tenant",
        ),
        ("responses: {background: {concurrency: 0}}\n", "responses.background.concurrency"),
        ("responses: {background: {retention: 0s}}\n", "responses.background.retention"),
        ("responses: {background: {enabled: maybe}}\n", "responses.background.enabled"),
        ("responses: {store: true}\n", "responses"),
    ],
)
def test_bad_values_are_refused_with_their_field(text: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(text, "gw.yaml")
    assert field in str(caught.value)


def test_the_configuration_guide_shows_the_built_in_defaults() -> None:
    reference = CONFIG_GUIDE.read_text(encoding="utf-8")
    block = reference.split("```yaml\n", 1)[1].split("```", 1)[0]
    section = re.search(r"^responses:.*\n(?:  .*\n)+", block, re.MULTILINE)
    assert section is not None, "docs/guides/configuration.md has no responses: section"
    assert load_config(section.group(0), "configuration.md").responses == ResponsesConfig()
