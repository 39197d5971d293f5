"""The dashboard's response cache marks and its `gw replay` preview, in a real headless
Chromium against a live gw in open mode with a fake OpenAI upstream (issue 28).

The same question asked twice through the openai SDK is a hit the second time: the
requests list marks it, its explain view names the request whose answer it served, and the
usage view counts it. In the Config tab a candidate config that removes a provider is
pasted and previewed: the moved traffic, the cost change and the assumptions show, and
nothing is applied. Any console error fails a test, CSP violations included."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import openai
import pytest
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, expect

from e2e.gw_process import GwServer
from fakes.openai_upstream import FakeOpenAI

pytestmark = pytest.mark.e2e
Browser = Callable[[], BrowserContext]  # the ``browser`` fixture (conftest.py)

MODELS = """
models:
  - {{provider: primary, model: gpt-a, input_per_mtok: 1.0, output_per_mtok: 2.0}}
  - {{provider: backup, model: gpt-b, input_per_mtok: 3.0, output_per_mtok: 6.0}}
"""
CONFIG = (
    """
auth: {{mode: open}}
providers:
  - {{name: primary, kind: openai_compatible, base_url: "{primary}"}}
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
"""
    + MODELS
    + """
routes:
  - name: chat
    targets: [{{provider: primary, model: gpt-a, priority: 1}}, {{provider: backup, model: gpt-b, priority: 2}}]
policies:
  - {{name: cached, match: {{routes: ["*"]}}, cache: {{enabled: true, ttl: 10m}}}}
"""
)
# The candidate: provider primary gone, with its catalog entry and its target.
CANDIDATE = """
providers:
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
models:
  - {{provider: backup, model: gpt-b, input_per_mtok: 3.0, output_per_mtok: 6.0}}
routes:
  - name: chat
    targets: [{{provider: backup, model: gpt-b}}]
policies:
  - {{name: cached, match: {{routes: ["*"]}}, cache: {{enabled: true, ttl: 10m}}}}
"""
QUESTION = [{"role": "user", "content": "How many turnips go in the stew?"}]


def watch_console(page: Page) -> list[str]:
    errors: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


@pytest.fixture
def upstreams() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as primary, FakeOpenAI() as backup:
        yield primary, backup


@pytest.fixture
def gw(tmp_path: Path, upstreams: tuple[FakeOpenAI, FakeOpenAI]) -> Iterator[GwServer]:
    primary, backup = upstreams
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG.format(primary=primary.base_url, backup=backup.base_url))
    with GwServer(tmp_path / "state", config) as server:
        yield server


def ask_twice(gw: GwServer) -> tuple[str, str]:
    """The same question twice through the openai SDK: a miss, then a hit."""
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="sk-anything", max_retries=0)
    ids = []
    for outcome in ("miss", "hit"):
        answer = client.chat.completions.with_raw_response.create(model="chat", messages=QUESTION)
        assert answer.headers["x-gw-cache"] == outcome
        ids.append(answer.headers["x-gw-request-id"])
    for request_id in ids:
        gw.wait_for_trace(request_id)
    return ids[0], ids[1]


def open_dashboard(browser: Browser, gw: GwServer) -> tuple[Page, list[str]]:
    link = json.loads(gw.cli("dashboard", "--json").stdout)["url"]
    page = browser().new_page()
    errors = watch_console(page)
    page.goto(str(link))
    return page, errors


def test_a_cache_hit_is_marked_in_requests_explain_and_usage(
    browser: Browser,
    gw: GwServer,
    upstreams: tuple[FakeOpenAI, FakeOpenAI],
    artifacts: Path,
) -> None:
    primary, _backup = upstreams
    kept, hit = ask_twice(gw)
    assert primary.count == 1  # the hit called no upstream
    page, errors = open_dashboard(browser, gw)

    rows = page.get_by_test_id("trace-row")
    expect(rows).to_have_count(2)
    hit_row = page.locator(f'[data-testid="trace-row"][data-request-id="{hit}"]')
    kept_row = page.locator(f'[data-testid="trace-row"][data-request-id="{kept}"]')
    expect(hit_row.get_by_test_id("cache-hit")).to_have_text("cache hit")
    expect(hit_row).to_contain_text("response cache")
    expect(kept_row.get_by_test_id("cache-hit")).to_have_count(0)
    expect(kept_row).to_contain_text("primary/gpt-a")
    expect(page.get_by_test_id("trace-count")).to_contain_text("1 from the response cache")
    page.get_by_test_id("filter-status").select_option("cache:hit")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-request-id", hit)
    page.screenshot(path=artifacts / "cache-requests.png", full_page=True)

    # Its explain view: a hit, the request it served from, no upstream, nothing billed.
    rows.first.click()
    marked = page.get_by_test_id("explain-cache")
    expect(marked).to_contain_text("cache hit")
    expect(page.get_by_test_id("cache-of")).to_have_text(kept)
    expect(page.get_by_test_id("view-explain")).to_contain_text("the response cache")
    expect(page.get_by_test_id("usage")).to_contain_text("the response cache: nothing billed")
    expect(page.get_by_test_id("decision")).to_contain_text("response cache hit")
    page.screenshot(path=artifacts / "cache-explain-hit.png", full_page=True)
    page.get_by_test_id("cache-of").click()
    expect(page.locator("h1.request-id")).to_have_text(kept)
    expect(page.get_by_test_id("explain-cache")).to_have_count(0)
    expect(page.get_by_test_id("view-explain")).to_contain_text("miss")

    # Usage: the hits counted from the traces (the usage report does not count them apart).
    page.get_by_role("link", name="Usage").click()
    tile = page.get_by_test_id("tile-cache-hits")
    expect(tile.locator(".tile-value")).to_have_text("1")
    expect(tile).to_contain_text("of 2 traced requests")
    page.screenshot(path=artifacts / "cache-usage.png", full_page=True)
    assert errors == []


def test_the_config_tab_previews_a_candidate_with_gw_replay(
    browser: Browser,
    gw: GwServer,
    upstreams: tuple[FakeOpenAI, FakeOpenAI],
    artifacts: Path,
) -> None:
    _primary, backup = upstreams
    ask_twice(gw)
    with gw.client() as http:
        revision = http.get("/admin/v1/status").json()["revision"]
    page, errors = open_dashboard(browser, gw)
    page.get_by_role("link", name="Config").click()

    candidate = page.get_by_test_id("replay-candidate")
    # Prefilled with the running config (JSON, which is YAML): previewed as it is, nothing
    # would change.
    expect(candidate).to_have_value(re.compile(r'"name": "primary"'))
    page.get_by_test_id("replay-run").click()
    expect(page.get_by_test_id("replay-summary")).to_contain_text("nothing would change")

    # A candidate without provider primary: the miss moves to backup; the hit is not routed.
    candidate.fill(CANDIDATE.format(backup=backup.base_url))
    page.get_by_test_id("replay-since").select_option("1h")
    page.get_by_test_id("replay-run").click()
    expect(page.get_by_test_id("replay-summary")).to_contain_text("1 would change")
    moved = page.get_by_test_id("replay-moved")
    expect(moved.locator("tbody tr")).to_have_count(1)
    expect(moved.locator("tbody td")).to_have_text(["chat", "primary/gpt-a", "backup/gpt-b", "1"])
    expect(page.get_by_test_id("replay-result")).to_contain_text("cache_hit 1")
    expect(page.get_by_test_id("replay-cost")).to_contain_text("after")
    expect(page.get_by_test_id("replay-cost-route")).to_contain_text("chat")
    expect(page.get_by_test_id("replay-assumptions").locator("li")).not_to_have_count(0)
    page.screenshot(path=artifacts / "config-replay.png", full_page=True)

    # A candidate that is not a valid config: the field and the reason.
    candidate.fill("routes: 3\n")
    page.get_by_test_id("replay-run").click()
    expect(page.get_by_test_id("replay-error")).to_contain_text("invalid_request: routes")

    # Nothing was applied.
    with gw.client() as http:
        assert http.get("/admin/v1/status").json()["revision"] == revision
    assert gw.config is not None
    # A real edit of the file is applied and the tab's auto-refresh shows it, keeping the
    # candidate being edited.
    gw.config.write_text(gw.config.read_text() + "tenants: [{name: team-a}]\n")
    expect(page.get_by_test_id("revision")).to_have_text(str(revision + 1), timeout=30_000)
    expect(candidate).to_have_value("routes: 3\n")
    # ... and so does going to another tab and back.
    page.get_by_role("link", name="Usage").click()
    page.get_by_role("link", name="Config").click()
    expect(page.get_by_test_id("replay-candidate")).to_have_value("routes: 3\n")
    assert [e for e in errors if "status of 400" not in e] == []  # but the refused candidate's
