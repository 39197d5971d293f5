"""What `gw serve` does not import: pydantic costs ~150 ms of every start and gw does not
use it (msgspec does its validation). It is installed whenever the openai or anthropic SDK
is, as in this test environment, so only gw's own choices keep it out: typer below 0.29
and Litestar without its default pydantic plugins (gw/server/runtime/litestar_app.py).
ruamel.yaml (~25 ms) is only needed by an admin write to the config file, and loads with
the first one;
prometheus-client (~25 ms) with the first scrape of /metrics; rich (~30 ms) with the first
line a command prints through it, or a log line written to a terminal; a WebSocket library
(~20 ms) never (gw/server/runtime/protocol.py); aiohttp (~0.35 s: it builds TLS contexts at
import), no longer one of gw's upstream clients, never (the benchmark's load client still
installs it in the dev environment)."""

from __future__ import annotations

import subprocess
import sys

UNWANTED = (
    "pydantic",
    "pydantic_core",
    "ruamel",
    "prometheus_client",
    "rich",
    "websockets",
    "aiohttp",
)

CODE = f"""
import sys
import typer
from gw.cli.main import app
from gw.config.schema import ServerConfig
from gw.server.runtime.litestar_app import GatewayLitestar
import gw.wiring
import gw.server.runtime.server
import gw.upstream_http.upstream_client
from gw.telemetry.metrics import GatewayMetrics

app_ = GatewayLitestar(route_handlers=[])  # Litestar adds its default plugins here
gw.server.runtime.server.uvicorn_config(app_, ServerConfig()).load()  # uvicorn picks its protocols here
GatewayMetrics(lambda: None, None)  # what gw serve builds at start (scraped later)
typer.main.get_command(app)  # typer builds gw serve's parameters here
gw.upstream_http.upstream_client.build_transport(ServerConfig().upstream_transport, {{}})  # the default upstream client
print(sorted(m for m in sys.modules if m.split(".")[0] in {UNWANTED!r}))
"""


def test_cli_and_server_start_without_what_they_do_not_need_yet() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_pydantic_is_importable_here_so_the_check_above_means_something() -> None:
    import pydantic  # noqa: PLC0415 - the point is that it can be imported

    assert pydantic.VERSION
