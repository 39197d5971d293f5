"""``gw state migrate --from SRC --to DST``: move the whole state between engines.

SQLite files are guarded like ``gw state restore`` guards the state dir: no ``gw serve``
may be using one (its server.json, its serve lock), and the lock is held for the copy so
none starts meanwhile. A PostgreSQL source is read as one snapshot, so gateways may keep
running on it; what they write after the snapshot is not copied.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gw.cli.console import fail, print_json, stdout
from gw.cli.options import JsonOption, StateDirOption, resolve_home
from gw.environment import database_path, running_server_pid
from gw.store import StoreError
from gw.store.open import store_errors
from gw.store.serve_lock import ServeLock, StateDirBusyError
from gw.store.state_migrate import Endpoint, MigrationReport, migrate, parse_endpoint

CHECKSUM_SHOWN = 16  # hex digits in the table; --json gives all 64

FromOption = Annotated[
    str,
    typer.Option(
        "--from",
        help="The store to copy: sqlite:PATH (sqlite: alone: the state dir's gw.db) or a"
        " postgresql:// URL.",
    ),
]
ToOption = Annotated[
    str,
    typer.Option("--to", help="The empty store to copy into, named the same ways."),
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


def migrate_command(
    source_text: FromOption,
    destination_text: ToOption,
    state_dir: StateDirOption = None,
    yes: YesOption = False,
    as_json: JsonOption = False,
) -> None:
    """Copy all of gw's state (keys, usage, config revisions, traces, runs, background
    responses) into an empty store of either engine, and verify every table by row
    count and checksum; nothing is committed unless all match."""
    home = resolve_home(state_dir)
    try:
        source = parse_endpoint(source_text, database_path(home))
        destination = parse_endpoint(destination_text, database_path(home))
    except StoreError as error:
        fail(str(error))
    _confirm(source, destination, yes=yes)
    errors = (*store_errors(None), *store_errors(source.url or destination.url))
    with _no_server_on(source, "migrate from it"), _no_server_on(destination, "migrate to it"):
        try:
            report = asyncio.run(migrate(source, destination))
        except errors as error:
            fail(f"cannot migrate {source.label} to {destination.label}: {error}")
    if as_json:
        print_json(_as_json(report))
    else:
        _print(report)
    if not report.ok:
        differ = ", ".join(t.name for t in report.tables if not t.match)
        fail(
            f"the copy in {destination.label} differs from the source in {differ}; it was"
            " rolled back, nothing was written"
        )


def _confirm(source: Endpoint, destination: Endpoint, *, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        fail("gw state migrate asks for confirmation; pass --yes to run it unattended")
    question = f"copy all gw state from {source.label} into {destination.label}?"
    if not typer.confirm(question):
        raise typer.Exit(1)


@contextlib.contextmanager
def _no_server_on(endpoint: Endpoint, doing: str) -> Iterator[None]:
    """Hold the serve lock of a SQLite endpoint's state dir for the block (see above)."""
    if endpoint.path is None:
        yield
        return
    home = endpoint.path.parent
    pid = running_server_pid(home)
    lock = ServeLock(home)
    try:
        locked = _locked(lock) if pid is None else False
    except OSError as error:
        fail(f"cannot lock {home}: {error}")
    if not locked:
        who = "" if pid is None else f" (pid {pid})"
        fail(f"a gw server{who} is running on {home}; stop it, then {doing}")
    try:
        yield
    finally:
        lock.release()


def _locked(lock: ServeLock) -> bool:
    try:
        lock.acquire()
    except StateDirBusyError:
        return False
    return True


def _as_json(report: MigrationReport) -> dict[str, object]:
    return {
        "from": report.source,
        "to": report.destination,
        "schema_version": report.schema_version,
        "source_schema_version_before": report.source_version_before,
        "tables": [
            {
                "name": t.name,
                "rows": t.rows,
                "checksum": t.checksum,
                "match": t.match,
                "destination_rows": t.destination_rows,
                "destination_checksum": t.destination_checksum,
            }
            for t in report.tables
        ],
        "ok": report.ok,
    }


def _print(report: MigrationReport) -> None:
    if report.source_version_before < report.schema_version:
        stdout.print(
            f"brought {report.source} from schema version {report.source_version_before} to"
            f" {report.schema_version} first",
            highlight=False,
            markup=False,
        )
    title = escape(f"{report.source} -> {report.destination}")
    table = Table(title=title, title_justify="left")
    table.add_column("table")
    table.add_column("rows", justify="right")
    table.add_column("checksum")
    table.add_column("match")
    for t in report.tables:
        rows = f"{t.rows:,}" if t.match else f"{t.rows:,} / {t.destination_rows:,}"
        table.add_row(
            escape(t.name),
            rows,
            t.checksum[:CHECKSUM_SHOWN],
            "[green]yes[/]" if t.match else "[red]NO[/]",
        )
    stdout.print(table)
    if report.ok:
        total = sum(t.rows for t in report.tables)
        stdout.print(
            f"copied {total:,} rows in {len(report.tables)} tables; every count and checksum"
            " matches",
            highlight=False,
            markup=False,
        )
