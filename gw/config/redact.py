"""The config as plain data with secret-bearing values hidden, for anything shown to a user.

Header values (providers', accounts' and the OTLP exporter's) are hidden: they may carry
credentials, and so are the passwords of the state URLs (``state.url``, ``state.redis_url``).
``api_key`` and ``admin_key`` are references (``env:NAME``, ``vault:NAME``; validation
refuses a literal key), so they show.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.config.schema import Config
from gw.config.state_url import safe_url
from gw.config.units import encode_unit

REDACTED = "***"


def redacted_json(config: Config) -> str:
    """The config as stored beside each revision: redacted, JSON."""
    return msgspec.json.encode(redacted(config)).decode()


def redacted(config: Config) -> dict[str, Any]:
    """``config`` as JSON-ready builtins, header values replaced by ``***``."""
    data: dict[str, Any] = msgspec.to_builtins(config, enc_hook=encode_unit)
    for provider in data.get("providers", []):
        provider["headers"] = dict.fromkeys(provider.get("headers", {}), REDACTED)
        for account in provider.get("accounts", []):
            account["headers"] = dict.fromkeys(account.get("headers", {}), REDACTED)
    state = data.get("state", {})
    for field in ("url", "redis_url"):
        if state.get(field):
            state[field] = safe_url(state[field])
    otlp = data.get("telemetry", {}).get("otlp", {})
    otlp["headers"] = dict.fromkeys(otlp.get("headers", {}), REDACTED)
    return data
