"""The CLI's consoles and its one way to fail: message on stderr, non-zero exit."""

from __future__ import annotations

import json
import sys
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

# Piped output has no terminal width; 80 columns would squeeze tables into ellipses.
PIPED_WIDTH = 200
stdout = Console(
    highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else PIPED_WIDTH
)
stderr = Console(stderr=True, highlight=False)


def fail(message: str, code: int = 1) -> NoReturn:
    # soft_wrap: no line breaks inserted, so a path in the message can be copied whole.
    stderr.print(
        f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False, soft_wrap=True
    )
    raise typer.Exit(code)


def print_json(data: object) -> None:
    """Machine output: plain JSON on stdout, no colour, no wrapping."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
