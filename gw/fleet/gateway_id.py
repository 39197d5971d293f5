"""The name one run of ``gw serve`` goes by in a fleet: in the breaker notes it publishes,
the trials it claims, and so in another gateway's ``gw health`` and ``gw explain``."""

from __future__ import annotations

import os
import secrets
import socket


def new_gateway_id() -> str:
    """``host-pid-random``: the host and pid say where to look; the random part tells a
    restarted process (same pid in a new container) from the one before it."""
    host = socket.gethostname().split(".", 1)[0] or "gw"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"
