"""``gw vault``: provider secrets in ``<state-dir>/vault.age`` (see gw/vault/).

Secrets enter through a prompt without echo (stdin is a terminal) or through stdin
(piped), never as an argument, so they stay out of shell history and ``ps``. Nothing here
prints a secret or an identity; ``--json`` shapes are documented in
docs/guides/vault.md.
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable
from typing import Annotated, TypeVar

import msgspec
import typer

from gw.cli.console import fail, print_json, stderr, stdout
from gw.cli.options import JsonOption, StateDirOption, resolve_home
from gw.environment import process_environ, running_server_pid
from gw.vault import Vault, VaultError, VaultStatus, check_name

T = TypeVar("T")

vault_app = typer.Typer(
    help="Provider secrets in an age-encrypted vault; config refers to them as vault:NAME.",
    no_args_is_help=True,
)
NameArgument = Annotated[str, typer.Argument(help="The secret's name: 1-64 of A-Z a-z 0-9 _ . -")]


def open_vault(state_dir: StateDirOption) -> Vault:
    return Vault(resolve_home(state_dir), process_environ())


def run(action: Callable[[], T]) -> T:
    """``action()``, with a vault failure as the CLI's error (stderr, exit 1)."""
    try:
        return action()
    except VaultError as error:
        fail(str(error))
    except OSError as error:
        fail(f"{error.filename}: {error.strerror}" if error.filename else str(error))


def strip_one_newline(text: str) -> str:
    """What ``echo`` and editors append: one trailing newline, not every one."""
    for ending in ("\r\n", "\n"):
        if text.endswith(ending):
            return text[: -len(ending)]
    return text


def read_secret(name: str) -> str:
    """From a prompt without echo when stdin is a terminal, else all of stdin."""
    if sys.stdin.isatty():
        try:
            return getpass.getpass(f"secret for {name} (input hidden): ")
        except EOFError:
            return ""
    return strip_one_newline(sys.stdin.read())


def secrets(count: int) -> str:
    return f"{count} secret" if count == 1 else f"{count} secrets"


def removal_hint(vault: Vault, name: str) -> None:
    """What a removal means to a running gw: nothing, until its config stops naming it."""
    pid = running_server_pid(vault.home)
    if pid is not None:
        stderr.print(
            f"the running gw (pid {pid}) keeps using {name} while its config names it "
            f"(vault:{name}); edit those fields, and it drops the secret with that edit"
        )


def restart_hint(vault: Vault) -> None:
    pid = running_server_pid(vault.home)
    if pid is not None:
        stderr.print(
            f"the running gw (pid {pid}) reads provider keys from the vault at start, on a "
            f"config edit and on SIGHUP: `kill -HUP {pid}` puts this change to use now (the "
            "admin key and OpenTelemetry headers are read at start only: restart for those)"
        )


@vault_app.command("init")
def init_command(state_dir: StateDirOption = None, as_json: JsonOption = False) -> None:
    """Create an empty vault (and an identity, when none exists); refuses if one exists.

    A new identity goes to the OS keyring when usable, else to <state-dir>/vault.key."""
    result = run(open_vault(state_dir).init)
    if as_json:
        print_json(msgspec.to_builtins(result))
        return
    origin = "a new identity, stored in" if result.created_identity else "the identity from"
    for line in (
        f"created {result.path} (empty)",
        f"encrypted to {origin} {result.identity_location}",
        f"recipient {result.recipient}",
        "next: `gw vault set NAME`, then `api_key: vault:NAME` in gw.yaml",
    ):
        stdout.print(line, highlight=False, markup=False)


@vault_app.command("set", context_settings={"allow_extra_args": True})
def set_command(
    ctx: typer.Context,
    name: NameArgument,
    state_dir: StateDirOption = None,
) -> None:
    """Store a secret under NAME, from a hidden prompt or stdin (never an argument).

    One trailing newline is dropped; an existing secret of that name is replaced."""
    if ctx.args:
        # Said without quoting the argument: it is likely the secret itself.
        fail(
            "gw vault set takes the secret from a prompt or stdin, never as an argument; "
            "nothing stored (that argument is now in your shell history: consider rotating it)"
        )
    vault = open_vault(state_dir)
    run(lambda: check_name(name))
    run(vault.require_exists)
    secret = read_secret(name)
    if not secret:
        fail(f"no secret given for {name}; nothing stored")
    count = run(lambda: vault.set(name, secret))
    stdout.print(f"stored {name} in {vault.path} ({secrets(count)})", highlight=False, markup=False)
    restart_hint(vault)


@vault_app.command("list")
def list_command(state_dir: StateDirOption = None, as_json: JsonOption = False) -> None:
    """The names of the secrets (never their values)."""
    vault = open_vault(state_dir)
    names = run(vault.names)
    if as_json:
        print_json(names)
        return
    if not names:
        stderr.print(f"{vault.path} holds no secrets; add one with `gw vault set NAME`")
    for name in names:
        stdout.print(name, highlight=False, markup=False)


@vault_app.command("rm")
def rm_command(name: NameArgument, state_dir: StateDirOption = None) -> None:
    """Remove the secret NAME."""
    vault = open_vault(state_dir)
    count = run(lambda: vault.remove(name))
    stdout.print(
        f"removed {name} from {vault.path} ({secrets(count)} left)", highlight=False, markup=False
    )
    removal_hint(vault, name)


@vault_app.command("rotate")
def rotate_command(state_dir: StateDirOption = None, as_json: JsonOption = False) -> None:
    """Re-encrypt the vault to a new identity, stored where the old one was.

    The old identity opens the vault until the new one is stored."""
    result = run(open_vault(state_dir).rotate)
    if as_json:
        print_json(msgspec.to_builtins(result))
        return
    for line in (
        f"re-encrypted {result.path} ({secrets(result.secrets)}) to a new identity",
        f"stored in {result.identity_location}",
        f"recipient {result.recipient} (was {result.old_recipient})",
    ):
        stdout.print(line, highlight=False, markup=False)


@vault_app.command("status")
def status_command(state_dir: StateDirOption = None, as_json: JsonOption = False) -> None:
    """The vault's path, identity source, recipient and number of secrets."""
    status = run(open_vault(state_dir).status)
    if as_json:
        print_json(msgspec.to_builtins(status))
        return
    for label, value in status_lines(status):
        stdout.print(f"{label:<10} {value}", highlight=False, markup=False)


def status_lines(status: VaultStatus) -> list[tuple[str, str]]:
    vault = (
        f"{status.path} ({secrets(status.secrets or 0)})"
        if status.exists
        else f"{status.path} (not created: run `gw vault init`)"
    )
    identity = (
        f"{status.identity_source}: {status.identity_location}"
        if status.identity_source
        else "none"
    )
    return [
        ("vault", vault),
        ("identity", identity),
        ("recipient", status.recipient or "-"),
        ("key file", status.key_file),
        ("keyring", status.keyring),
    ]
