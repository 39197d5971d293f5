"""Open mode's browser guard: which Host and Origin values a web page could send."""

from __future__ import annotations

import pytest

from gw.server.browser_guard import open_mode_refusal

ALLOWED = ("http://localhost:5173",)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:8787",
        "localhost:8787",
        "localhost.:8787",
        "app.localhost:8787",
        "[::1]:8787",
        "[::ffff:127.0.0.1]:8787",
        "127.0.0.1",
        "",  # HTTP/1.0 without Host
    ],
)
def test_loopback_hosts_go_on(host: str) -> None:
    assert open_mode_refusal({"host": host}, ALLOWED) is None


@pytest.mark.parametrize(
    "host", ["attacker.example:8787", "localhost.attacker.example", "10.0.0.1:80", "[::2]:1"]
)
def test_other_hosts_are_refused(host: str) -> None:
    reason = open_mode_refusal({"host": host}, ALLOWED)
    assert reason is not None
    assert "auth.mode: keys" in reason


@pytest.mark.parametrize(
    ("origin", "refused"),
    [
        ("http://127.0.0.1:8787", False),  # gw's own page
        ("http://localhost:5173", False),  # configured
        ("https://evil.example", True),
        ("null", True),
        ("http://127.0.0.1:9999", True),  # another port: another origin
    ],
)
def test_origins(origin: str, refused: bool) -> None:
    headers = {"host": "127.0.0.1:8787", "origin": origin}
    assert (open_mode_refusal(headers, ALLOWED) is not None) is refused


@pytest.mark.parametrize(
    ("site", "refused"),
    [("cross-site", True), ("same-site", True), ("same-origin", False), ("none", False)],
)
def test_requests_a_browser_marks_as_from_another_site(site: str, refused: bool) -> None:
    """A page's image or no-cors fetch sends no Origin, but the browser says where from."""
    headers = {"host": "127.0.0.1:8787", "sec-fetch-site": site}
    assert (open_mode_refusal(headers, ALLOWED) is not None) is refused
