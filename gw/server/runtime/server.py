"""uvicorn's server, ending on SIGTERM with exit status 0 once it has drained.

On SIGTERM or SIGINT uvicorn stops accepting, lets in-flight requests and streams finish
(up to ``timeout_graceful_shutdown``, gw's ``server.drain_timeout``), runs the lifespan
shutdown (gw flushes traces and usage there), then re-raises the signal so the process
dies by it. A service manager reads a death by SIGTERM as a failure; after a complete,
graceful drain gw exits 0 instead. SIGINT (Ctrl-C) keeps uvicorn's behaviour.
"""

from __future__ import annotations

import signal
from types import FrameType

import uvicorn


class GracefulServer(uvicorn.Server):
    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM:
            self.should_exit = True  # drain, then return from serve(): exit status 0
            return
        super().handle_exit(sig, frame)
