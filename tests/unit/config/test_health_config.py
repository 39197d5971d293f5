"""The ``health:`` section: defaults, units, and errors naming the field and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gw.config import ConfigError, load_config
from gw.config.schema import HealthConfig
from gw.config.units import Duration

CONFIG_GUIDE = Path(__file__).parents[3] / "docs" / "guides" / "configuration.md"


def test_defaults_when_the_section_is_absent() -> None:
    health = load_config("", "gw.yaml").health
    assert health == HealthConfig()
    assert (health.degraded_after, health.unhealthy_after, health.min_requests) == (3, 9, 10)
    assert health.error_rate == 0.5
    assert (health.window, health.cooldown) == (Duration(60.0), Duration(5.0))
    assert (health.max_cooldown, health.trial_timeout) == (Duration(300.0), Duration(30.0))


def test_values_and_durations_are_read() -> None:
    text = "health:\n  degraded_after: 1\n  unhealthy_after: 1\n  error_rate: 1.0\n  cooldown: 500ms\n  max_cooldown: 1h\n"
    health = load_config(text, "gw.yaml").health
    assert (health.degraded_after, health.unhealthy_after, health.error_rate) == (1, 1, 1.0)
    assert (health.cooldown.seconds, health.max_cooldown.seconds) == (0.5, 3600.0)
    assert health.window == Duration(60.0)


def test_the_configuration_guide_shows_the_built_in_defaults() -> None:
    reference = CONFIG_GUIDE.read_text(encoding="utf-8")
    block = reference.split("```yaml\n", 1)[1].split("```", 1)[0]
    section = re.search(r"^health:.*\n(?:  .*\n)+", block, re.MULTILINE)
    assert section is not None, "docs/guides/configuration.md has no health: section"
    assert load_config(section.group(0), "configuration.md").health == HealthConfig()


@pytest.mark.parametrize(
    ("body", "path", "reason", "line"),
    [
        ("degraded_after: 0", "health.degraded_after", "at least 1", 3),
        ("degraded_after: 5\n  unhealthy_after: 4", "health.unhealthy_after", "at least degraded_after (5)", 4),
        ("error_rate: 0", "health.error_rate", "above 0 and at most 1", 3),
        ("error_rate: 1.5", "health.error_rate", "above 0 and at most 1", 3),
        ("min_requests: 0", "health.min_requests", "at least 1", 3),
        ("window: 0s", "health.window", "longer than 0s", 3),
        ("cooldown: 0ms", "health.cooldown", "longer than 0s", 3),
        ("trial_timeout: 0", "health.trial_timeout", "longer than 0s", 3),
        ("cooldown: 10m", "health.max_cooldown", "at least cooldown (10m)", 2),
        ("window: soon", "health.window", "is not a duration", 3),
        ("breaker: true", "health.breaker", "unknown field; fields here: ", 3),
    ],
)  # fmt: skip
def test_errors_name_the_field_line_and_reason(
    body: str, path: str, reason: str, line: int
) -> None:
    """Line 1 is ``server: {}``, line 2 ``health:``, the body starts on line 3."""
    with pytest.raises(ConfigError) as caught:
        load_config(f"server: {{}}\nhealth:\n  {body}\n", "gw.yaml")
    assert caught.value.path == path
    assert reason in caught.value.reason
    assert caught.value.line == line
