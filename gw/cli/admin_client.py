"""Calls from the CLI to the running server's admin API (``/admin/v1``), found through
``<state-dir>/server.json``; the admin key as ``gw health`` finds it (gw/cli/health_cmd.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import msgspec

from gw.cli.console import fail
from gw.cli.health_cmd import (
    ADMIN_KEY_ENV,
    START_HINT,
    TIMEOUT_S,
    ServerInfo,
    admin_key,
    loopback_url,
)
from gw.environment import SERVER_FILE_NAME


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
    server = server_info(home)
    if server is None:
        raise NoServerError(
            f"no gw server is running for this state directory (no {home / SERVER_FILE_NAME}); "
            f"{START_HINT}"
        )
    url = loopback_url(server)
    headers = {}
    if server.auth_mode != "open":
        key = admin_key(home, config, url)
        if key is not None:
            headers["authorization"] = f"Bearer {key}"
    try:
        # trust_env=False: a proxy from the environment must not intercept a loopback call.
        with httpx.Client(timeout=TIMEOUT_S, trust_env=False) as client:
            return client.request(method, url + path, headers=headers, json=body)
    except httpx.ConnectError:
        raise NoServerError(
            f"no gw server answers at {url} (connection refused; a stale {SERVER_FILE_NAME}?); "
            f"{START_HINT}"
        ) from None
    except httpx.HTTPError as error:
        raise NoServerError(f"cannot reach gw at {url}: {type(error).__name__}: {error}") from None


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
    if answer.status_code in (401, 403):
        text += (
            f"; set {ADMIN_KEY_ENV}, or make auth.admin_key resolvable here "
            "(pass the server's --config)"
        )
    return text
