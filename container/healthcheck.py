"""The container's HEALTHCHECK: is the gw in this container ready to serve?

Asks ``/readyz`` (never behind auth: it carries no data) on loopback, at the port the
running server wrote to ``$GW_HOME/server.json``, so a port set in the config or by
``GW_PORT`` is followed. Ready means a config snapshot is loaded and the state store can
be written; unready prints gw's reason, which ``docker inspect`` shows. Exit 0 healthy,
1 not. Standard library only: it runs with the image's Python, outside gw.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

TIMEOUT_S = 4.0


def main() -> int:
    server_file = Path(os.environ.get("GW_HOME", "/var/lib/gw")) / "server.json"
    try:
        port = int(json.loads(server_file.read_text())["port"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"gw is not serving yet: {server_file}: {error}")
        return 1
    url = f"http://127.0.0.1:{port}/readyz"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            print(response.read().decode(errors="replace"))
            return 0
    except urllib.error.HTTPError as error:  # 503: gw says why it is not ready
        print(f"{url}: {error.code} {error.read().decode(errors='replace')}")
    except OSError as error:
        print(f"{url}: {error}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
