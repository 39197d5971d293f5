"""The CLI's consoles and its one way to fail: message on stderr, non-zero exit."""

from __future__ import annotations

import json
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

stdout = Console(highlight=False, soft_wrap=False)
stderr = Console(stderr=True, highlight=False)


def fail(message: str, code: int = 1) -> NoReturn:
    stderr.print(f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False)
    raise typer.Exit(code)


def print_json(data: object) -> None:
    """Machine output: plain JSON on stdout, no colour, no wrapping."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
