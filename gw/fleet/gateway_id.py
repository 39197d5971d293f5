"""The name one run of ``gw serve`` goes by in a fleet: in the breaker notes it publishes,
the trials it claims, each trace and usage row it writes, and so in another gateway's
``gw health``, ``gw explain``, ``gw traces`` and ``gw usage --by gateway``.

Strategy: ``GW_GATEWAY_ID`` names it when set (a name an operator reads: ``gw-a``, the
host name of a VM); otherwise ``host-pid-random``, fresh for each run, which needs no
setup and can never be shared by two live gateways by mistake. The name is checked, not
trusted: it reaches every trace and terminal.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
from collections.abc import Mapping
from typing import Final

GATEWAY_ID_VARIABLE: Final = "GW_GATEWAY_ID"
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def new_gateway_id() -> str:
    """``host-pid-random``: the host and pid say where to look; the random part tells a
    restarted process (same pid in a new container) from the one before it."""
    host = socket.gethostname().split(".", 1)[0] or "gw"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


def gateway_id(environ: Mapping[str, str]) -> str:
    """``GW_GATEWAY_ID`` when set, else ``new_gateway_id()``. Raises ``ValueError`` for a
    name that is not 1-63 letters, digits, ``.``, ``_`` or ``-`` (starting with a letter
    or digit)."""
    given = environ.get(GATEWAY_ID_VARIABLE, "")
    if not given:
        return new_gateway_id()
    if _NAME.fullmatch(given) is None:
        raise ValueError(
            f"{GATEWAY_ID_VARIABLE}={given[:80]!r}: give 1-63 letters, digits, '.', '_' or"
            " '-', starting with a letter or digit"
        )
    return given
