"""uvicorn as gw runs it: its config, and a server that ends on SIGTERM with exit status 0
once it has drained.

On SIGTERM or SIGINT uvicorn stops accepting, lets in-flight requests and streams finish
(up to ``timeout_graceful_shutdown``, gw's ``server.drain_timeout``), runs the lifespan
shutdown (gw flushes traces and usage there), then re-raises the signal so the process
dies by it. A service manager reads a death by SIGTERM as a failure; after a complete,
graceful drain gw exits 0 instead. SIGINT (Ctrl-C) keeps uvicorn's behaviour.

What of uvicorn it relies on: its signal handler calls ``Server.handle_exit(sig, frame)``,
which records the signal in ``_captured_signals`` (re-raised after ``serve()``) and sets
``should_exit``; gw's override sets only ``should_exit`` for SIGTERM.
tests/unit/server/runtime/test_internals.py checks those names.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

import uvicorn

from gw.config.schema import ServerConfig
from gw.server.runtime.protocol import gateway_protocol


class GracefulServer(uvicorn.Server):
    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM:
            self.should_exit = True  # drain, then return from serve(): exit status 0
            return
        super().handle_exit(sig, frame)


def uvicorn_config(app: Any, server_config: ServerConfig) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        loop="none",
        # httptools plus gw's patches (gw/server/runtime/protocol.py); its header-read
        # deadline also runs between requests: a kept-alive connection idles
        # min(header_timeout, 15 s).
        http=gateway_protocol(server_config.header_timeout.seconds),
        ws="none",  # upgrades get 403 from the protocol itself
        lifespan="on",
        log_level="warning",
        # uvicorn's own handlers print plain text (a traceback over many lines): its records
        # go to gw's JSON log handler instead (gw/telemetry/log_lines.py).
        log_config=None,
        access_log=False,
        timeout_keep_alive=15,
        timeout_graceful_shutdown=int(server_config.drain_timeout.seconds),
        # X-Forwarded-For only from configured proxies (gw/server/edges.py); none: ignored.
        proxy_headers=bool(server_config.trusted_proxies),
        forwarded_allow_ips=list(server_config.trusted_proxies),
    )
