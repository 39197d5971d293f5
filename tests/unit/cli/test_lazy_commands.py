"""gw's commands but `version` and `serve` load when they run (gw/cli/lazy.py): each one
still runs, `gw --help` still lists them all, a typo is still answered with a suggestion,
and `gw serve` does not import them."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gw.cli.lazy import LAZY_COMMANDS, LAZY_SUB_APPS, LazyCommands
from gw.cli.main import app

LAZY = [*LAZY_COMMANDS, *LAZY_SUB_APPS]


@pytest.mark.parametrize("name", LAZY)
def test_a_lazy_command_loads_and_shows_its_own_help(name: str) -> None:
    result = CliRunner().invoke(app, [name, "--help"], prog_name="gw")
    assert result.exit_code == 0, result.output
    assert f"Usage: gw {name} " in result.output


def test_help_lists_every_command_singles_first_then_sub_apps() -> None:
    output = CliRunner().invoke(app, ["--help"], prog_name="gw").output
    listed = [match[1] for match in re.finditer(r"^│ (\S+)", output, re.MULTILINE)]
    commands = [name for name in listed if not name.startswith("-")]
    assert commands == [*LAZY_COMMANDS, "version", "serve", *LAZY_SUB_APPS]


@pytest.mark.parametrize(("typo", "meant"), [("tpo", "top"), ("confg", "config")])
def test_a_typo_gets_a_suggestion_among_lazy_names(typo: str, meant: str) -> None:
    result = CliRunner().invoke(app, [typo], prog_name="gw")
    assert result.exit_code == 2
    assert f"Did you mean '{meant}'?" in result.output


def test_a_lazy_sub_apps_commands_run() -> None:
    result = CliRunner().invoke(app, ["config", "validate", "--help"], prog_name="gw")
    assert result.exit_code == 0, result.output
    assert "Usage: gw config validate" in result.output


def test_running_one_command_loads_no_other_commands_module() -> None:
    modules = sorted({module for module, _ in [*LAZY_COMMANDS.values(), *LAZY_SUB_APPS.values()]})
    code = (
        "import sys\n"
        "from gw.cli.main import app\n"
        "try:\n"
        "    app(['version'], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {modules!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert "gw.cli.top_cmd" in modules  # not vacuous


def test_a_command_failing_to_load_with_a_key_error_is_not_no_such_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_: object) -> None:
        raise KeyError("UNSET")  # e.g. os.environ["UNSET"] while the module loads

    monkeypatch.setattr(LazyCommands, "_load", broken)
    result = CliRunner().invoke(app, ["top"], prog_name="gw")
    assert "No such command" not in result.output
    assert isinstance(result.exception, RuntimeError)
    assert "could not load its command 'top'" in str(result.exception)
