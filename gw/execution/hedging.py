"""Hedging: race the rest of the chain against a slow first target (whole answers only).

With ``policies[].hedge.after`` set, a non-streaming request starts on its first target
as usual. If no answer has come ``after`` seconds later, the rest of the chain starts in
parallel (its attempts are marked ``hedge``); the first answer wins and the other lane is
cancelled, its open attempt traced as ``hedge_lost``. A first target that fails before
the delay simply falls back (nothing is hedged); one that fails with an error that may
not fall back (a bad request) ends the request, as it would without hedging. When both
lanes fail, the rest's error is the request's, as after a plain fallback.

Streams are never hedged: their answer reaches the client as it comes, so there is no
"first answer" to pick without sending two.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from gw.config.schema import FallbackConfig
from gw.execution.fallback import may_fall_back

R = TypeVar("R")
HEDGE_LOST = "hedge lost"  # the cancel message for the lane that did not answer first


class HedgeLostError(Exception):
    """A lane answered after the other had: its answer is dropped (and traced so)."""


async def hedged(
    first: Awaitable[R],
    rest: Callable[[bool], Awaitable[R]],
    after: float,
    fallback: FallbackConfig,
) -> R:
    """``first`` alone for ``after`` seconds, then raced by ``rest(True)``; see the module
    docstring. ``rest(False)`` is a plain fallback, started when ``first`` fails early."""
    lead = asyncio.ensure_future(first)
    running: set[asyncio.Future[R]] = {lead}
    try:
        await asyncio.wait(running, timeout=after)
        if lead.done():
            running.clear()
            if lead.exception() is None or not _may_continue(lead, fallback):
                return lead.result()  # the answer, or the error that ends the request
            return await rest(False)
        hedge = asyncio.ensure_future(rest(True))
        running.add(hedge)
        while running:
            done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            failures = {lane: lane.exception() for lane in done}  # each one retrieved
            winner = next((lane for lane, failure in failures.items() if failure is None), None)
            ended = lead in done and winner is None and not _may_continue(lead, fallback)
            if winner is not None or ended:
                await _cancel(running, HEDGE_LOST)
                running = set()
                return (winner or lead).result()
        # Both failed, the first with an error that may fall back: the rest's error is the
        # request's, as after a plain fallback.
        return hedge.result()
    finally:
        await _cancel(running, None)  # the caller was cancelled (the client left)


def _may_continue(lane: asyncio.Future[R], fallback: FallbackConfig) -> bool:
    """True when the lane's failure lets the request go on to the rest of the chain."""
    error = getattr(lane.exception(), "error", None)
    return error is not None and may_fall_back(error, fallback)


async def _cancel(lanes: set[asyncio.Future[R]], message: str | None) -> None:
    """Cancel the lanes and wait until each has traced its open attempt."""
    for lane in lanes:
        lane.cancel(message)
    await asyncio.gather(*lanes, return_exceptions=True)
