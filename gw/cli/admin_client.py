"""Calls from the CLI to the running server's admin API (``/admin/v1``), found through
``<state-dir>/server.json``. The admin plane is never anonymous (gw/server/auth.py); a call
sends, in this order: ``$GW_ADMIN_KEY`` when set (the admin key, or an API key with an
admin scope); else the local admin token the server wrote to ``<state-dir>/admin-token``
(gw/store/admin_token.py), in either auth mode; else, in ``keys`` mode, the config's
``auth.admin_key`` reference resolved from this shell's environment, the config found as
``gw serve`` finds it (``--config``, ``$GW_CONFIG``, ``<state-dir>/gw.yaml``).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from gw.adapters.secrets import SecretResolver
from gw.cli.console import fail
from gw.cli.options import load_or_fail, resolve_config
from gw.environment import SERVER_FILE_NAME, process_environ
from gw.errors import GatewayError
from gw.store.admin_token import AdminTokenError, read_admin_token

if TYPE_CHECKING:  # httpx is imported when a call is made: every CLI start paid ~95 ms
    import httpx

ADMIN_KEY_ENV = "GW_ADMIN_KEY"
TIMEOUT_S = 10.0
START_HINT = "start one with `gw serve`"


class ServerInfo(msgspec.Struct, kw_only=True):
    """The fields of ``server.json`` this command reads (``announce`` in gw/wiring.py)."""

    url: str
    port: int
    host: str | None = None
    auth_mode: str | None = None


def loopback_url(server: ServerInfo) -> str:
    """The server's url, with a wildcard bind (0.0.0.0, ::) reached over loopback."""
    if server.host is None:
        return server.url
    try:
        unspecified = ipaddress.ip_address(server.host).is_unspecified
    except ValueError:
        return server.url
    if not unspecified:
        return server.url
    loopback = "[::1]" if ":" in server.host else "127.0.0.1"
    return f"http://{loopback}:{server.port}"


def admin_credential(
    home: Path, config: Path | None, url: str, auth_mode: str | None
) -> str | None:
    """What an admin call sends (module docstring), or None when there is nothing."""
    environ = process_environ()
    if environ.get(ADMIN_KEY_ENV):
        return environ[ADMIN_KEY_ENV]
    try:
        token = read_admin_token(home)
    except AdminTokenError as error:
        fail(str(error))
    if token is not None or auth_mode == "open":
        return token
    return configured_admin_key(home, config, url, environ)


def configured_admin_key(
    home: Path, config: Path | None, url: str, environ: Mapping[str, str]
) -> str | None:
    """The config's ``auth.admin_key`` resolved here, else None."""
    path, explicit = resolve_config(config, home)
    reference = load_or_fail(path, explicit=explicit).config.auth.admin_key
    if reference is None:
        return None
    return resolve_admin_key(reference, environ, url)


def resolve_admin_key(reference: str, environ: Mapping[str, str], url: str) -> str:
    try:
        return SecretResolver(environ).resolve(reference, field="auth.admin_key")
    except GatewayError:
        # The reference names a variable, never the key: safe to print.
        fail(
            f"the server at {url} needs the admin key: auth.admin_key is {reference}, "
            f"which this shell cannot resolve; export it, or set {ADMIN_KEY_ENV}"
        )


class NoServerError(Exception):
    """No gw server runs for this state directory, or it does not answer."""


def server_info(home: Path) -> ServerInfo | None:
    """``server.json`` as written by the running server; None when there is none."""
    try:
        return msgspec.json.decode((home / SERVER_FILE_NAME).read_bytes(), type=ServerInfo)
    except FileNotFoundError:
        return None
    except (OSError, msgspec.DecodeError) as error:
        raise NoServerError(f"cannot read {home / SERVER_FILE_NAME}: {error}") from None


def admin_call(
    home: Path, config: Path | None, method: str, path: str, body: object | None = None
) -> httpx.Response:
    """One admin API call; ``NoServerError`` when no server answers."""
    url, headers = admin_target(home, config)
    # trust_env=False: a proxy from the environment must not intercept a loopback call.
    with http_client() as client:
        return request(client, url, method, path, headers=headers, body=body)


def http_client() -> httpx.Client:
    """A client for loopback admin calls (``trust_env=False``: no proxy from the env)."""
    import httpx  # noqa: PLC0415 - see the import at the top

    return httpx.Client(timeout=TIMEOUT_S, trust_env=False)


def admin_target(home: Path, config: Path | None) -> tuple[str, dict[str, str]]:
    """The running server's url and the headers an admin call sends (its credential:
    module docstring), for a command that calls it many times; ``NoServerError`` when none."""
    server = server_info(home)
    if server is None:
        raise NoServerError(
            f"no gw server is running for this state directory (no {home / SERVER_FILE_NAME}); "
            f"{START_HINT}"
        )
    url = loopback_url(server)
    headers = {}
    credential = admin_credential(home, config, url, server.auth_mode)
    if credential is not None:
        headers["authorization"] = f"Bearer {credential}"
    return url, headers


def request(
    client: httpx.Client,
    url: str,
    method: str,
    path: str,
    *,
    headers: dict[str, str],
    body: object | None = None,
) -> httpx.Response:
    """``method path`` on the server at ``url``; ``NoServerError`` when it does not answer."""
    import httpx  # noqa: PLC0415 - see the import at the top

    try:
        return client.request(method, url + path, headers=headers, json=body)
    except httpx.ConnectError:
        raise NoServerError(
            f"no gw server answers at {url} (connection refused; a stale {SERVER_FILE_NAME}?); "
            f"{START_HINT}"
        ) from None
    except httpx.HTTPError as error:
        raise NoServerError(f"cannot reach gw at {url}: {type(error).__name__}: {error}") from None


def admin_call_or_fail(
    home: Path, config: Path | None, method: str, path: str, body: object | None = None
) -> httpx.Response:
    """``admin_call`` for a command that needs a 2xx answer: fails with what went wrong."""
    try:
        answer = admin_call(home, config, method, path, body)
    except NoServerError as error:
        fail(str(error))
    if answer.status_code >= 300:
        fail(call_error(answer, path))
    return answer


def answer_json(answer: httpx.Response, path: str) -> Any:
    """The answer's JSON body; on a non-2xx answer, fail with the server's own message."""
    if answer.status_code >= 300:
        fail(call_error(answer, path))
    try:
        return answer.json()
    except ValueError:
        fail(f"{path}: the server answered something other than JSON")


def call_error(answer: httpx.Response, path: str) -> str:
    """The server's error message (OpenAI shape), with what to do for auth errors."""
    try:
        error = json.loads(answer.text)["error"]
        message = f"{error['code']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        message = f"HTTP {answer.status_code}"
    text = f"{path} failed: {message}"
    if answer.status_code == 401:
        text += (
            f"; this needs an admin key: run this as the user that runs gw serve (it reads "
            f"the local admin token from the state directory), or set {ADMIN_KEY_ENV} to the "
            "server's auth.admin_key (or pass the server's --config, so it resolves here), "
            "or to an API key with an admin scope (`gw keys create --tenant T --scopes admin`)"
        )
    elif answer.status_code == 403:
        text += (
            f"; {ADMIN_KEY_ENV} holds a key without the scope this needs: use one with it "
            "(`gw keys create --tenant T --scopes admin`), or unset it to use the local "
            "admin token"
        )
    return text
