"""The CLI's consoles and its one way to fail: message on stderr, non-zero exit.

The consoles (``stdout``, ``stderr``) are made, and rich imported (~30 ms), when a command
first uses one: ``gw serve`` prints its one line without them.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from rich.console import Console

    stdout: Console
    stderr: Console

# Piped output has no terminal width; 80 columns would squeeze tables into ellipses.
PIPED_WIDTH = 200


def __getattr__(name: str) -> Console:
    if name not in ("stdout", "stderr"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _console(name)


def _console(name: str) -> Console:
    console: Console | None = globals().get(name)
    if console is None:
        from rich.console import Console  # noqa: PLC0415

        if name == "stdout":
            width = None if sys.stdout.isatty() else PIPED_WIDTH
            console = Console(highlight=False, soft_wrap=False, width=width)
        else:
            console = Console(stderr=True, highlight=False)
        globals()[name] = console  # made once; later lookups find it there
    return console


def fail(message: str, code: int = 1) -> NoReturn:
    from rich.markup import escape  # noqa: PLC0415

    # soft_wrap: no line breaks inserted, so a path in the message can be copied whole.
    _console("stderr").print(
        f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False, soft_wrap=True
    )
    raise typer.Exit(code)


def print_json(data: object) -> None:
    """Machine output: plain JSON on stdout, no colour, no wrapping."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
