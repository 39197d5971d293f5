"""Why a connection to an upstream failed, in words, from the error's type (never its
text): the built-in client's connect errors, and the ones under httpx's ``ConnectError``."""

from __future__ import annotations

import socket
import ssl


def connect_failure(error: OSError) -> str:
    """What went wrong: TLS verification, a TLS failure, an unknown name, a refusal."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {error.verify_message}"
    if isinstance(error, ssl.SSLError):
        return f"TLS failed: {error.reason or error}"
    if isinstance(error, socket.gaierror):
        return "host name not found"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    return error.strerror or type(error).__name__


def os_error_under(error: BaseException) -> OSError | None:
    """The first ``OSError`` in ``error``'s chain of causes (httpx wraps httpcore's error,
    which wraps the socket's or ssl's), or None."""
    seen = 0
    cause = error.__cause__ or error.__context__
    while cause is not None and seen < 8:  # a chain is short; never loop on a cycle
        if isinstance(cause, OSError):
            return cause
        cause = cause.__cause__ or cause.__context__
        seen += 1
    return None
