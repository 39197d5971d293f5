"""``gw config show``, ``validate``, ``schema``, ``history``, ``diff`` and ``rollback``.

``history`` and ``diff`` read the database in the state dir (the server may be stopped);
``rollback`` asks the running server (``POST /admin/v1/config/rollback``), which writes
the revision's stored file text back to the config file and applies it.

``gw config history --json``: an array, newest first, of
``{"revision", "time" (epoch seconds), "source", "hash"}``; ``source`` is ``start``,
``file``, ``admin``, ``rollback`` or ``signal`` (gw/reload.py). ``gw config diff A B
--json``: ``{"from", "to", "diff"}`` (a unified diff of the redacted configs as YAML,
empty when they are the same). ``gw config rollback N --json``: the server's answer,
``{"revision", "rolled_back_to", "applied"}``. ``gw config schema`` prints a JSON Schema
(draft 2020-12) of the file (gw/config/json_schema.py), ``--json`` or not.
"""

from __future__ import annotations

import datetime
import difflib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, TypeVar

import msgspec
import typer
import yaml
from rich.table import Table
from rich.text import Text

from gw.cli.admin_client import NoServerError, admin_call, answer_json
from gw.cli.console import fail, print_json, stderr, stdout
from gw.cli.credentials_check import check_here
from gw.cli.options import (
    ConfigOption,
    JsonOption,
    StateDirOption,
    load_effective,
    load_or_fail,
    override_names,
    resolve_config,
    resolve_home,
)
from gw.cli.state_target import state_target
from gw.config import ConfigError
from gw.config.json_schema import config_json_schema
from gw.config.redact import REDACTED, redacted
from gw.config.validate import config_warnings, local_upstreams
from gw.store.port import StateStore
from gw.store.revisions import RevisionRow, StoredRevision

__all__ = ["REDACTED", "config_app", "redacted"]

config_app = typer.Typer(
    help="Show, check, describe (as a JSON Schema), list, compare or roll back the config.",
    no_args_is_help=True,
)
ROLLBACK_PATH = "/admin/v1/config/rollback"
T = TypeVar("T")


@config_app.command("show")
def show_command(
    config: ConfigOption = None, state_dir: StateDirOption = None, as_json: JsonOption = False
) -> None:
    """Print the resolved config (defaults, file and GW_* variables; secrets redacted)."""
    path, explicit = resolve_config(config, resolve_home(state_dir))
    loaded = load_or_fail(path, explicit=explicit)
    data = redacted(loaded.config)
    if as_json:
        print_json({"source": loaded.source, "config": data})
        return
    stdout.print(f"# source: {loaded.source}", highlight=False)
    stdout.print(yaml.safe_dump(data, sort_keys=False), highlight=False, end="")


@config_app.command("validate")
def validate_command(
    path: Annotated[
        Path | None, typer.Argument(help="File to check (default: the config gw would load).")
    ] = None,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check a config file; exits non-zero with file:line: field: reason when it is bad."""
    if path is None:
        path, explicit = resolve_config(None, resolve_home(state_dir))
    else:
        explicit = True
    try:
        loaded = load_effective(path, explicit=explicit, plugins=True)
    except ConfigError as error:
        if as_json:
            problem = {"source": error.source, "line": error.line, "field": error.path}
            print_json({"valid": False, **problem, "reason": error.reason})
        fail(str(error))
    credentials = check_here(loaded.config, resolve_home(state_dir))
    warnings = [*config_warnings(loaded.config), *credentials.warnings()]
    local = local_upstreams(loaded.config)
    summary = {
        "valid": True,
        "source": loaded.source,
        "providers": len(loaded.config.providers),
        "routes": len(loaded.config.routes),
        "policies": len(loaded.config.policies),
        "models": len(loaded.config.models),
        "warnings": warnings,
        "local_upstreams": [upstream._asdict() for upstream in local],
        "credentials": msgspec.to_builtins(credentials),
    }
    if as_json:
        print_json(summary)
        return
    for warning in warnings:  # one line each, whatever the terminal's width: greppable
        stderr.print(f"warning: {warning}", highlight=False, markup=False, soft_wrap=True)
    if credentials.gaps:
        stderr.print(
            "(credentials checked against this shell's environment and the state dir's vault;"
            " gw serve checks its own at start)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    stdout.print(
        f"ok: {loaded.source}: {summary['providers']} providers, {summary['routes']} routes, "
        f"{summary['policies']} policies, {summary['models']} catalog entries",
        highlight=False,
    )
    if local:
        named = ", ".join(f"{u.provider} ({u.kind} {u.host})" for u in local)
        stdout.print(f"on loopback or private addresses: {named}", highlight=False, markup=False)


@config_app.command("schema")
def schema_command(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", dir_okay=False, help="Write the schema to FILE instead of stdout."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print a JSON Schema (draft 2020-12) of gw.yaml, for editors to check and complete it.

    Save it (--output gw.schema.json), then put `# yaml-language-server:
    $schema=./gw.schema.json` on the first line of gw.yaml, or map it in VS Code's
    yaml.schemas setting. It is JSON with or without --json.
    """
    del as_json  # accepted as on every command that prints data; the schema is JSON anyway
    schema = config_json_schema(override_names())
    text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        fail(f"cannot write {output}: {error.strerror or error}")
    stdout.print(f"wrote {output}", highlight=False, markup=False)


def read_store(
    home: Path, read: Callable[[StateStore], Awaitable[T]], empty: T, config: Path | None = None
) -> T:
    """``read`` against the state dir's store (gw/cli/state_target.py); ``empty`` when
    there is none yet."""
    target = state_target(home, config)
    if not target.exists():
        return empty
    return target.run(read)


@config_app.command("history")
def history_command(
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="How many, newest first.")
    ] = None,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """List applied config revisions, newest first: how each was made (its source), and
    for an admin write who made it and why."""
    home = resolve_home(state_dir)
    empty: list[RevisionRow] = []
    rows = read_store(home, lambda store: store.list_revisions(limit=limit), empty)
    if as_json:
        print_json(msgspec.to_builtins(rows))
        return
    if not rows:
        stdout.print(
            f"no config revision recorded yet in {state_target(home).label}", highlight=False
        )
        return
    table = Table(title="Config revisions", title_justify="left")
    for column in ("revision", "time", "source", "hash", "by", "reason"):
        table.add_column(column, justify="right" if column == "revision" else "left")
    for row in rows:
        when = datetime.datetime.fromtimestamp(row.time).astimezone().isoformat(timespec="seconds")
        table.add_row(
            *(Text(cell) for cell in (str(row.revision), when, row.source, row.hash[:12])),
            Text(row.actor or "-"),
            Text(row.reason or "-"),
        )
    stdout.print(table)


@config_app.command("diff")
def diff_command(
    first: Annotated[int, typer.Argument(metavar="A", help="The older revision.")],
    second: Annotated[int, typer.Argument(metavar="B", help="The newer revision.")],
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show what changed from revision A to B: a unified diff of the resolved configs
    (secrets redacted), as YAML."""
    home = resolve_home(state_dir)

    async def both(store: StateStore) -> tuple[StoredRevision | None, StoredRevision | None]:
        return await store.get_revision(first), await store.get_revision(second)

    nothing: tuple[StoredRevision | None, StoredRevision | None] = (None, None)
    older, newer = read_store(home, both, nothing)
    texts = [revision_yaml(first, older), revision_yaml(second, newer)]
    diff = "".join(
        difflib.unified_diff(
            texts[0].splitlines(keepends=True),
            texts[1].splitlines(keepends=True),
            fromfile=f"revision {first}",
            tofile=f"revision {second}",
        )
    )
    if as_json:
        print_json({"from": first, "to": second, "diff": diff})
        return
    if not diff:
        stdout.print(f"revisions {first} and {second} are the same config", highlight=False)
        return
    stdout.print(diff, highlight=False, markup=False, end="")


def revision_yaml(number: int, stored: StoredRevision | None) -> str:
    """A revision's redacted config as YAML; fails for an unknown or uncopied revision."""
    if stored is None:
        fail(f"there is no config revision {number}; `gw config history` lists them")
    if stored.redacted is None:
        fail(
            f"revision {number} was recorded by an older gw, which kept no copy of the config "
            "to compare"
        )
    return yaml.safe_dump(json.loads(stored.redacted), sort_keys=False)


@config_app.command("rollback")
def rollback_command(
    revision: Annotated[int, typer.Argument(metavar="N", help="The revision to go back to.")],
    config: ConfigOption = None,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Restore revision N's config file (comments included) on the running server.

    It applies as a new revision, whose source `gw config history` shows as rollback."""
    try:
        answer = admin_call(
            resolve_home(state_dir), config, "POST", ROLLBACK_PATH, {"revision": revision}
        )
    except NoServerError as error:
        fail(f"{error} (a rollback needs the running server)")
    body = answer_json(answer, ROLLBACK_PATH)
    if as_json:
        print_json(body)
        return
    if body.get("applied"):
        stdout.print(
            f"rolled back to revision {revision}: now running revision {body['revision']}",
            highlight=False,
        )
    else:
        stdout.print(
            f"revision {revision} is the config already running (revision {body['revision']});"
            " the file now holds its text",
            highlight=False,
        )
