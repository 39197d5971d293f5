"""Plugins named in config are imported when the config loads: what does not import, has no
hook, or refuses its settings is a config error naming the file, the field and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gw.config import ConfigError, load_config
from gw.environment import outside_problems, read_config
from gw.plugin_loader import load_plugins

SAMPLES = "unit.plugin_samples"
REPO = Path(__file__).parent.parent.parent


def _config(plugin: str) -> str:
    return f"plugins:\n  - name: p\n{plugin}"


def _load_error(plugin: str) -> ConfigError:
    with pytest.raises(ConfigError) as failed:
        load_config(_config(plugin), "gw.yaml", outside=outside_problems)
    return failed.value


def test_a_class_is_made_with_its_settings_and_its_async_hooks_are_found() -> None:
    text = _config(f"    entry_point: {SAMPLES}:Tagger\n    settings: {{to: fast}}\n")
    config = load_config(text, "gw.yaml", outside=outside_problems)
    (plugin,) = load_plugins(config, "gw.yaml")
    assert set(plugin.hooks) == {"before_routing"}
    assert plugin.settings == {"to": "fast"}
    assert plugin.config.timeout.seconds == pytest.approx(0.05)
    assert plugin.config.on_error == "skip"


@pytest.mark.parametrize(
    ("plugin", "field", "reason"),
    [
        ("    entry_point: no_such_module_here:X\n", "entry_point", "cannot import"),
        (f"    entry_point: {SAMPLES}:Missing\n", "entry_point", "has no attribute Missing"),
        (f"    entry_point: {SAMPLES}:nothing\n", "entry_point", "has none of the hooks"),
        (f"    entry_point: {SAMPLES}:Syncy\n", "settings", "takes no arguments"),
        (f"    entry_point: {SAMPLES}:Picky\n", "settings", "settings.needed is required"),
        (
            f"    entry_point: {SAMPLES}:sleeper\n    hooks: [before_routing]\n",
            "hooks",
            "has no before_routing method",
        ),
        ("    entry_point: not-installed-plugin\n", "entry_point", "group gw.plugins"),
        ("    entry_point: unknown_entry_point\n", "entry_point", "no installed entry point"),
    ],
)
def test_a_plugin_that_cannot_be_loaded_is_a_config_error_naming_the_field(
    plugin: str, field: str, reason: str
) -> None:
    error = _load_error(plugin)
    assert error.path == f"plugins[0].{field}"
    assert reason in error.reason
    assert error.line is not None


def test_a_hook_must_be_async() -> None:
    error = _load_error(f"    entry_point: {SAMPLES}:syncy\n")
    assert error.path == "plugins[0].entry_point"
    assert "before_routing must be async def" in error.reason


@pytest.mark.parametrize(
    ("plugin", "field", "reason"),
    [
        (f"    entry_point: {SAMPLES}:says\n    timeout: 0s\n", "timeout", "above 0s"),
        (f"    entry_point: {SAMPLES}:says\n    timeout: 1m\n", "timeout", "at most 10s"),
        (f"    entry_point: {SAMPLES}:says\n    hooks: []\n", "hooks", "at least one hook"),
        (
            f"    entry_point: {SAMPLES}:says\n    hooks: [before_routing, before_routing]\n",
            "hooks",
            "twice",
        ),
        (f"    entry_point: {SAMPLES}:says\n    on_error: ignore\n", "on_error", "skip"),
        (f"    entry_point: {SAMPLES}:says\n    hooks: [after_all]\n", "hooks[0]", "after_answer"),
    ],
)
def test_plugin_fields_are_checked_without_importing(plugin: str, field: str, reason: str) -> None:
    with pytest.raises(ConfigError) as failed:
        load_config(_config(plugin), "gw.yaml")
    assert failed.value.path == f"plugins[0].{field}"
    assert reason in failed.value.reason


def test_two_plugins_of_one_name_are_refused() -> None:
    one = f"  - {{name: p, entry_point: '{SAMPLES}:says'}}\n"
    with pytest.raises(ConfigError) as failed:
        load_config("plugins:\n" + one + one, "gw.yaml")
    assert failed.value.path == "plugins[1].name"


def test_the_shipped_example_config_loads_its_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "examples" / "plugins"))
    path = REPO / "examples" / "plugins" / "gw.yaml"
    config = load_config(path.read_text(), str(path), outside=outside_problems)
    (plugin,) = load_plugins(config, str(path))
    assert plugin.config.name == "aliases"
    assert set(plugin.hooks) == {"before_routing"}


def test_only_what_runs_plugins_imports_them(tmp_path: Path) -> None:
    """`gw serve`, a reload and `gw config validate` import plugins; a command that only
    reads the config (gw explain, gw traces) works where the plugin's code is not found."""
    path = tmp_path / "gw.yaml"
    path.write_text(_config("    entry_point: not_on_this_path:Plugin\n"))
    assert read_config(path, explicit=True).config.plugins[0].name == "p"
    with pytest.raises(ConfigError) as failed:
        read_config(path, explicit=True, plugins=True)
    assert failed.value.path == "plugins[0].entry_point"
