"""``gw state backup`` and ``gw state restore``: whole-database copies of the state dir."""

from __future__ import annotations

import contextlib
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Annotated

import msgspec
import typer
from rich.markup import escape

from gw.cli.console import fail, print_json, stderr, stdout
from gw.cli.options import JsonOption, StateDirOption, resolve_home
from gw.cli.state_migrate_cmd import migrate_command
from gw.cli.state_target import state_target
from gw.environment import database_path, running_server_pid
from gw.store import StoreError
from gw.store.backup import DatabaseSummary, backup, restore
from gw.store.serve_lock import ServeLock, StateDirBusyError

state_app = typer.Typer(
    help="Back up, restore and migrate gw's state (traces, usage, config history, keys).",
    no_args_is_help=True,
)
state_app.command("migrate")(migrate_command)

PathArgument = Annotated[Path, typer.Argument(help="The backup file.")]


def _locked(lock: ServeLock) -> bool:
    """Take ``lock``; False when a gw serve holds it."""
    try:
        lock.acquire()
    except StateDirBusyError:
        return False
    return True


def working(message: str, *, quiet: bool) -> AbstractContextManager[object]:
    """A spinner on stderr while a copy runs (a large database takes a while): only on a
    terminal, never with ``--json``."""
    if quiet or not stderr.is_terminal:
        return contextlib.nullcontext()
    return stderr.status(escape(message) + " …")


def _describe(summary: DatabaseSummary) -> str:
    return (
        f"{summary.bytes:,} bytes, schema version {summary.schema_version}: {summary.traces}"
        f" traces, {summary.usage} usage rows, {summary.config_revisions} config revisions"
    )


def refuse_shared_state(home: Path, command: str) -> None:
    """These commands copy the SQLite file; a PostgreSQL store has its own tools."""
    target = state_target(home)
    if target.shared:
        tool = "pg_dump" if command == "backup" else "pg_restore (or psql for a plain dump)"
        fail(
            f"gw state {command} works on the SQLite database; state.url puts the state in"
            f" PostgreSQL at {target.label}: use {tool} there"
        )


@state_app.command("backup")
def backup_command(
    path: PathArgument,
    force: Annotated[bool, typer.Option("--force", help="Overwrite PATH if it exists.")] = False,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Copy the state database to PATH; safe while the server runs (a consistent snapshot)."""
    home = resolve_home(state_dir)
    refuse_shared_state(home, "backup")
    source = database_path(home)
    try:
        with working(f"backing up {source}", quiet=as_json):
            summary = backup(source, path.expanduser(), force=force)
    except (StoreError, sqlite3.Error, OSError) as error:
        fail(f"backup failed: {error}")
    if as_json:
        print_json(msgspec.to_builtins(summary))
        return
    stdout.print(f"backed up {source} to {summary.path}", highlight=False, markup=False)
    stdout.print(_describe(summary), highlight=False, markup=False)


@state_app.command("restore")
def restore_command(
    path: PathArgument,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replace the state database with the backup at PATH; the server must be stopped.

    The current database is kept beside it as gw.db.bak-<time>; its config revisions
    newer than the backup's are kept, so revision numbers never go back."""
    home = resolve_home(state_dir)
    refuse_shared_state(home, "restore")
    pid = running_server_pid(home)
    lock = ServeLock(home)  # held while the database is replaced: no gw serve starts meanwhile
    if pid is not None or not _locked(lock):
        who = "" if pid is None else f" (pid {pid})"
        fail(f"a gw server{who} is running on {home}; stop it, then restore")
    try:
        with working(f"restoring {path}", quiet=as_json):
            result = restore(path.expanduser(), database_path(home))
    except (StoreError, sqlite3.Error, OSError) as error:
        fail(f"restore failed: {error}")
    finally:
        lock.release()
    if result.warning is not None:
        stderr.print(f"warning: {result.warning}", highlight=False, markup=False)
    if as_json:
        print_json(msgspec.to_builtins(result))
        return
    database = result.database
    stdout.print(f"restored {database.path} from {path}", highlight=False, markup=False)
    stdout.print(_describe(database), highlight=False, markup=False)
    if result.moved_aside is not None:
        stdout.print(
            f"the previous database is kept as {result.moved_aside}", highlight=False, markup=False
        )
    if result.carried_revisions:
        stdout.print(
            f"kept config revisions {_span(result.carried_revisions)} of the previous database,"
            " so revision numbers continue from there",
            highlight=False,
            markup=False,
        )


def _span(revisions: tuple[int, ...]) -> str:
    first, last = revisions[0], revisions[-1]
    return str(first) if first == last else f"{first}-{last}"
