"""Config size limits: a file over the byte limit is refused before it is parsed, one whose
aliases expand past the value limit before it is validated, each naming the limit and
GW_MAX_CONFIG_BYTES; the variable raises both."""

from __future__ import annotations

from pathlib import Path

import pytest

from gw.config import ConfigError, load_config
from gw.config.limits import DEFAULT_MAX_CONFIG_BYTES, ConfigLimits
from gw.environment import config_limits, read_config

SMALL = (
    "providers: [{name: m, kind: mock}]\nroutes: [{name: r, targets: [{provider: m, model: x}]}]\n"
)


def alias_bomb(levels: int) -> str:
    """Ten times as many values per level, in a few hundred bytes."""
    lines = ["l0: &l0 [a, a, a, a, a, a, a, a, a, a]"]
    for level in range(1, levels):
        below = f"*l{level - 1}"
        lines.append(f"l{level}: &l{level} [{', '.join([below] * 10)}]")
    return "\n".join(lines) + "\n"


def test_a_text_over_the_byte_limit_is_refused_naming_the_limit_and_the_variable() -> None:
    text = SMALL + "#" + "x" * 2000 + "\n"
    with pytest.raises(ConfigError) as refused:
        load_config(text, "gw.yaml", limits=ConfigLimits(max_bytes=1024))
    message = str(refused.value)
    assert message.startswith("gw.yaml: the file is 0.0 MiB, over the 1KiB limit")
    assert "GW_MAX_CONFIG_BYTES" in message


def test_a_file_over_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_bytes(b"\xff" * 4096)  # not UTF-8: reading it would fail differently
    with pytest.raises(ConfigError, match="over the 1KiB limit on a config file"):
        read_config(path, explicit=True, limits=ConfigLimits(max_bytes=1024))


def test_aliases_that_expand_past_the_value_limit_are_refused() -> None:
    text = alias_bomb(8)  # 10^8 values from ~600 bytes
    assert len(text) < 1000
    with pytest.raises(ConfigError) as refused:
        load_config(text, "gw.yaml")
    limit = DEFAULT_MAX_CONFIG_BYTES // 4
    assert f"holds more than {limit:,} values (YAML aliases count each time" in str(refused.value)


def test_aliases_within_the_limit_load_as_before() -> None:
    with pytest.raises(ConfigError, match="unknown field"):  # past the limits: validation
        load_config(alias_bomb(3), "gw.yaml")
    assert load_config(SMALL, "gw.yaml").routes[0].name == "r"


@pytest.mark.parametrize(
    ("value", "limit"), [("32MiB", 32 * 2**20), ("2000", 2000), ("", DEFAULT_MAX_CONFIG_BYTES)]
)
def test_gw_max_config_bytes_sets_the_limit(value: str, limit: int) -> None:
    assert config_limits({"GW_MAX_CONFIG_BYTES": value}).max_bytes == limit


def test_a_bad_gw_max_config_bytes_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"^\$GW_MAX_CONFIG_BYTES: 'lots' is not a size"):
        config_limits({"GW_MAX_CONFIG_BYTES": "lots"})
