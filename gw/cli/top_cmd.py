"""``gw top``: a live view of the running server, from its ``GET /metrics``.

Scrapes ``/metrics`` every ``--interval`` seconds and shows what changed between the last
two scrapes (gw/cli/top_frame.py computes, gw/cli/top_view.py renders): requests per
second, latency quantiles, errors by code, routes, providers, breakers and the revision.
``--once`` scrapes twice, ``--interval`` apart, renders one frame and exits; ``--json``
prints frames as JSON (one object with ``--once``, else one line per interval). The server
is found like every other command finds it (``server.json``, the admin key in ``keys``
mode); with none running it exits 1 with the reason on stderr. Ctrl-C exits 0.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated

import msgspec
import typer
from rich.live import Live

from gw.cli.admin_client import NoServerError, admin_target, call_error, http_client, request
from gw.cli.console import fail, print_json, stdout
from gw.cli.options import ConfigOption, JsonOption, StateDirOption, resolve_home
from gw.cli.top_frame import Scrape, TopFrame, compute_frame
from gw.cli.top_view import top_renderable, waiting_renderable

if TYPE_CHECKING:
    import httpx

METRICS_PATH = "/metrics"


class ScrapeError(Exception):
    """``/metrics`` did not answer with metrics; the message says why."""


class Scraper:
    """``GET /metrics`` on one server, over one kept-alive connection."""

    def __init__(self, client: httpx.Client, url: str, headers: dict[str, str]) -> None:
        self.client, self.url, self.headers = client, url, headers

    def __call__(self) -> Scrape:
        try:
            answer = request(self.client, self.url, "GET", METRICS_PATH, headers=self.headers)
        except NoServerError as error:
            raise ScrapeError(str(error)) from None
        if answer.status_code >= 300:
            raise ScrapeError(call_error(answer, METRICS_PATH))
        try:
            return Scrape.parse(answer.text)
        except ValueError as error:
            raise ScrapeError(f"{METRICS_PATH}: not Prometheus metrics ({error})") from None


def frames(scrape: Callable[[], Scrape], interval_s: float) -> Iterator[TopFrame]:
    """A frame every ``interval_s`` seconds, each from the last two scrapes (no drift: the
    next scrape is due ``interval_s`` after the previous one started)."""
    before, taken = scrape(), time.monotonic()
    while True:
        time.sleep(max(0.0, taken + interval_s - time.monotonic()))
        after, now = scrape(), time.monotonic()
        yield compute_frame(before, after, now - taken)
        before, taken = after, now


def top_command(
    interval: Annotated[
        float, typer.Option("--interval", min=0.1, help="Seconds between scrapes.")
    ] = 1.0,
    once: Annotated[
        bool, typer.Option("--once", help="Show one frame (two scrapes --interval apart), exit.")
    ] = False,
    state_dir: StateDirOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Watch the running server live: traffic, latency, errors, routes, providers."""
    home = resolve_home(state_dir)
    try:
        url, headers = admin_target(home, config)
    except NoServerError as error:
        fail(str(error))
    with http_client() as client:
        stream = frames(Scraper(client, url, headers), interval)
        try:
            show(stream, url, interval, once=once, as_json=as_json)
        except ScrapeError as error:
            fail(str(error))
        except KeyboardInterrupt:
            return


def show(
    stream: Iterator[TopFrame], url: str, interval: float, *, once: bool, as_json: bool
) -> None:
    if once:
        frame = next(stream)
        if as_json:
            print_json(msgspec.to_builtins(frame))
        else:
            stdout.print(top_renderable(frame, url))
        return
    if as_json:
        for frame in stream:
            typer.echo(json.dumps(msgspec.to_builtins(frame), ensure_ascii=False))
        return
    with Live(waiting_renderable(url, interval), console=stdout, auto_refresh=False) as live:
        for frame in stream:
            live.update(top_renderable(frame, url), refresh=True)
