"""Request ids: time-ordered, unique, and safe to print anywhere."""

from __future__ import annotations

import secrets
import time


def new_request_id() -> str:
    """``req_`` + 12 hex digits of milliseconds + 16 random hex digits (sortable by time)."""
    return f"req_{int(time.time() * 1000):012x}{secrets.token_hex(8)}"
