"""A real headless Chromium for the dashboard tests, driven by Playwright.

The browser is the system's (Debian package ``chromium``, /usr/bin/chromium, which
./scripts/test installs when missing), never one Playwright downloads. When there is none,
or it cannot start, these tests skip with the reason; under ./scripts/test, which sets
``GW_REQUIRE_BROWSER=1`` once Chromium is installed (and always in CI), they fail instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from playwright.sync_api import BrowserContext, Error, Playwright, sync_playwright

CHROMIUM = Path(os.environ.get("GW_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).parents[2] / "build" / "test-artifacts" / "dashboard"

Browser = Callable[[], BrowserContext]


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("GW_REQUIRE_BROWSER") == "1":
        pytest.fail(f"the dashboard's browser tests need Chromium: {reason}")
    pytest.skip(f"dashboard browser tests skipped: {reason}")


@pytest.fixture
def playwright_driver() -> Iterator[Playwright]:
    """Per test: while Playwright's sync API is open, its event loop runs in this thread,
    and every later test's ``asyncio.run`` would fail."""
    if not CHROMIUM.exists():
        unavailable(
            os.environ.get("GW_BROWSER_UNAVAILABLE")
            or f"{CHROMIUM} is missing (./scripts/test installs Debian's chromium package)"
        )
    with sync_playwright() as driver:
        yield driver


@pytest.fixture
def browser(playwright_driver: Playwright, tmp_path: Path) -> Iterator[Browser]:
    """Opens a Chromium with a fresh profile (so no cookie or storage carries over); every
    one opened is closed after the test."""
    opened: list[BrowserContext] = []

    def launch() -> BrowserContext:
        profile = tmp_path / f"chromium-profile-{len(opened)}"
        try:
            context = playwright_driver.chromium.launch_persistent_context(
                profile,
                executable_path=str(CHROMIUM),
                args=CHROMIUM_ARGS,
                headless=True,
                viewport={"width": 1360, "height": 900},
            )
        except Error as error:
            unavailable(f"{CHROMIUM} did not start: {error.message.splitlines()[0]}")
        context.set_default_timeout(15_000)
        opened.append(context)
        return context

    yield launch
    for context in opened:
        context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (git-ignored: build/)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
