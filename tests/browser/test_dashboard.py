"""The dashboard in a real headless Chromium, against a live gw: the requests list and its
filters, an explain view, a breaker opened by injected failures, usage charts and the config
view in open mode (logged in through `gw dashboard`, as in every mode); the login link, the
session and log-out in keys mode. Screenshots go to
build/test-artifacts/dashboard/. Any console error fails a test, CSP violations included."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, expect

from e2e.gw_process import GwServer, run_cli
from fakes.openai_upstream import Behavior, FakeOpenAI

pytestmark = pytest.mark.e2e
Browser = Callable[[], BrowserContext]  # the ``browser`` fixture (conftest.py)

OPEN_CONFIG = """
auth: {{mode: open}}
providers:
  - {{name: primary, kind: openai_compatible, base_url: "{primary}"}}
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
  - {{name: mock, kind: mock}}
models:
  - {{provider: primary, model: gpt-a, input_per_mtok: 1.0, output_per_mtok: 2.0}}
  - {{provider: backup, model: gpt-b, input_per_mtok: 0.5, output_per_mtok: 1.0}}
routes:
  - name: chat
    targets:
      - {{provider: primary, model: gpt-a, priority: 1}}
      - {{provider: backup, model: gpt-b, priority: 2}}
  - name: mock
    targets: [{{provider: mock, model: mock-1}}]
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
# Three failures in a row open a breaker, for long enough that nothing here races it.
health: {{degraded_after: 3, unhealthy_after: 3, error_rate: 1.0, cooldown: 10m,
          max_cooldown: 10m, trial_timeout: 10s}}
"""
ADMIN = "gw-admin-browser-0123456789abcdefghijklm"
KEYS_CONFIG = """
auth: {mode: keys, admin_key: env:GW_TEST_ADMIN}
tenants: [{name: team-a}]
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
"""


def chat(server: GwServer, model: str, headers: dict[str, str] | None = None) -> str:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    with server.client() as http:
        answer = http.post("/v1/chat/completions", json=body, headers=headers or {})
    return answer.headers["x-gw-request-id"]


def watch_console(page: Page) -> list[str]:
    """Console errors and uncaught exceptions; a CSP violation is reported as one."""
    errors: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def shot(page: Page, artifacts: Path, name: str) -> None:
    page.screenshot(path=artifacts / f"{name}.png", full_page=True)


@pytest.fixture(scope="module")
def upstreams() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as primary, FakeOpenAI() as backup:
        yield primary, backup


@pytest.fixture(scope="module")
def open_gw(
    tmp_path_factory: pytest.TempPathFactory, upstreams: tuple[FakeOpenAI, FakeOpenAI]
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("dashboard-open")
    config = home / "gw.yaml"
    primary, backup = upstreams
    config.write_text(OPEN_CONFIG.format(primary=primary.base_url, backup=backup.base_url))
    with GwServer(home / "state", config) as server:
        yield server


@pytest.fixture(scope="module")
def keys_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("dashboard-keys")
    config = home / "gw.yaml"
    config.write_text(KEYS_CONFIG)
    with GwServer(home / "state", config, env={"GW_TEST_ADMIN": ADMIN}) as server:
        yield server


def test_open_mode_requests_explain_health_usage_and_config(
    browser: Browser,
    open_gw: GwServer,
    upstreams: tuple[FakeOpenAI, FakeOpenAI],
    artifacts: Path,
) -> None:
    primary, _backup = upstreams
    chat(open_gw, "mock")
    tagged = chat(open_gw, "mock", {"x-request-id": "dash-browser-42"})
    chat(open_gw, "nope")  # 404 model_not_found
    primary.enqueue(*[Behavior(status=500)] * 3)
    fell_back = [chat(open_gw, "chat") for _ in range(3)]  # primary fails: breaker opens
    skipped = chat(open_gw, "chat")  # primary is not even tried now
    open_gw.wait_for_trace(skipped)
    # Open mode too: the dashboard is never anonymous, and the CLI, which reads the local
    # admin token by itself, prints a one-time login link.
    printed = json.loads(open_gw.cli("dashboard", "--json").stdout)
    assert printed["auth_mode"] == "open"
    assert printed["login_link"] is True
    assert str(printed["url"]).startswith(open_gw.url + "/dashboard/login?token=")

    page = browser().new_page()
    errors = watch_console(page)
    page.goto(str(printed["url"]))
    rows = page.get_by_test_id("trace-row")
    expect(rows).to_have_count(7)
    expect(page.get_by_test_id("header-revision")).to_contain_text("revision")
    shot(page, artifacts, "open-requests")

    # Filters: status, error code, route/model, free text on the request id.
    page.get_by_test_id("filter-status").select_option("error")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("model_not_found")
    page.get_by_test_id("filter-status").select_option("code:model_not_found")
    expect(rows).to_have_count(1)
    page.get_by_test_id("filter-status").select_option("")
    page.get_by_test_id("filter-model").select_option("chat")
    expect(rows).to_have_count(4)
    page.get_by_test_id("filter-model").select_option("mock")
    expect(rows).to_have_count(2)
    page.get_by_test_id("filter-text").fill("dash-browser")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-request-id", tagged)
    shot(page, artifacts, "open-requests-filtered")
    page.get_by_test_id("filter-text").fill(tagged[-10:])
    expect(rows).to_have_count(1)
    page.get_by_test_id("filter-text").fill("")
    page.get_by_test_id("filter-model").select_option("")
    expect(rows).to_have_count(7)

    # Auto-refresh: a new request appears without a reload.
    chat(open_gw, "mock")
    expect(rows).to_have_count(8, timeout=20_000)

    # Explain: the first request that fell back, its candidates and attempts timeline.
    page.locator(f'[data-request-id="{fell_back[0]}"]').click()
    expect(page.get_by_test_id("view-explain")).to_be_visible()
    expect(page.get_by_test_id("timeline-attempt")).to_have_count(2)
    statuses = page.get_by_test_id("candidate-status")
    expect(statuses).to_have_text(["chosen", "fallback #1"])
    expect(page.get_by_test_id("attempts")).to_contain_text("fell_back")
    expect(page.get_by_test_id("attempts")).to_contain_text("upstream_error")
    expect(page.get_by_test_id("usage")).to_contain_text("input tokens")
    shot(page, artifacts, "open-explain-fallback")

    page.goto(f"{open_gw.url}/#/requests/{skipped}")
    expect(page.get_by_test_id("timeline-attempt")).to_have_count(1)
    rejected = page.get_by_test_id("candidate-status").filter(has_text="rejected: unhealthy")
    expect(rejected).to_have_count(1)
    expect(page.get_by_test_id("decision")).to_contain_text("breaker opened")
    shot(page, artifacts, "open-explain-breaker")

    # Health: the breaker the failures opened.
    page.get_by_role("link", name="Health").click()
    row = page.locator('[data-testid="health-row"][data-target="primary/gpt-a"]')
    expect(row).to_have_attribute("data-breaker", "open")
    expect(row.get_by_test_id("breaker")).to_have_text("open")
    backup = page.locator('[data-testid="health-row"][data-target="backup/gpt-b"]')
    expect(backup).to_have_attribute("data-breaker", "closed")
    expect(page.get_by_test_id("tile-breakers-open")).to_contain_text("1")
    shot(page, artifacts, "open-health")

    # Usage: charts by day, route and model.
    page.get_by_role("link", name="Usage").click()
    expect(page.get_by_test_id("chart-day").locator("rect.bar")).not_to_have_count(0)
    expect(page.get_by_test_id("chart-route")).to_contain_text("chat")
    expect(page.get_by_test_id("chart-model")).to_contain_text("gpt-b")
    page.get_by_test_id("usage-metric").select_option("requests")
    expect(page.get_by_test_id("chart-route")).to_contain_text("mock")
    shot(page, artifacts, "open-usage")

    # Config: the running revision and its reload status.
    page.get_by_role("link", name="Config").click()
    with open_gw.client() as http:
        status = http.get("/admin/v1/status").json()
    expect(page.get_by_test_id("revision")).to_have_text(str(status["revision"]))
    expect(page.get_by_test_id("reload-status")).to_contain_text("applied")
    shot(page, artifacts, "open-config")
    assert errors == []


def test_keys_mode_logs_in_through_a_one_time_link(
    browser: Browser, keys_gw: GwServer, artifacts: Path
) -> None:
    made = json.loads(
        run_cli(
            "keys", "create", "--config", str(keys_gw.config), "--tenant", "team-a", "--json",
            "--state-dir", str(keys_gw.state_dir), env=keys_gw.env,
        ).stdout
    )  # fmt: skip
    team = chat(keys_gw, "mock", {"authorization": f"Bearer {made['key']}"})
    chat(keys_gw, "mock", {"authorization": f"Bearer {ADMIN}"})
    keys_gw.wait_for_trace(team)

    context: BrowserContext = browser()
    page = context.new_page()
    errors = watch_console(page)
    page.goto(keys_gw.url + "/")
    notice = page.get_by_test_id("login-needed")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("gw dashboard")
    shot(page, artifacts, "keys-login-needed")

    env = {**keys_gw.env, "GW_ADMIN_KEY": ADMIN}
    done = run_cli("dashboard", "--state-dir", str(keys_gw.state_dir), "--json", env=env)
    link = json.loads(done.stdout)["url"]
    page.goto(link)
    rows = page.get_by_test_id("trace-row")
    expect(rows.first).to_be_visible()
    assert "token" not in page.url  # the 303 took it out of the address bar
    assert page.url.rstrip("/").removesuffix("#/requests") == keys_gw.url
    # The session is an HttpOnly cookie: no script, and no storage, ever holds a secret.
    assert page.evaluate("document.cookie") == ""
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    assert ADMIN not in page.content()

    page.get_by_test_id("filter-tenant").select_option("team-a")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-request-id", team)
    expect(page.locator("#logout")).to_be_visible()
    shot(page, artifacts, "keys-requests")

    used = context.new_page()
    used.goto(link)
    expect(used.get_by_test_id("login-refused")).to_contain_text("cannot be used")
    shot(used, artifacts, "keys-link-refused")
    used.close()

    page.locator("#logout").click()
    expect(page.get_by_test_id("login-needed")).to_be_visible()
    errors = [e for e in errors if "401" not in e]  # the logged-out page's refused reads
    assert errors == []


def test_switches_show_in_health_and_explain(
    browser: Browser, tmp_path: Path, upstreams: tuple[FakeOpenAI, FakeOpenAI], artifacts: Path
) -> None:
    primary, backup = upstreams
    config = tmp_path / "gw.yaml"
    config.write_text(OPEN_CONFIG.format(primary=primary.base_url, backup=backup.base_url))
    with GwServer(tmp_path / "state", config) as server:
        server.cli("switch", "off", "provider", "primary", "--reason", "incident 42")
        served = chat(server, "chat")
        server.wait_for_trace(served)
        dashboard = json.loads(server.cli("dashboard", "--json").stdout)["url"]
        page = browser().new_page()
        errors = watch_console(page)
        page.goto(f"{dashboard}#/requests/{served}")
        switched = page.get_by_test_id("candidate-status").filter(has_text="rejected: switched_off")
        expect(switched).to_have_count(1)
        expect(page.get_by_test_id("decision")).to_contain_text("incident 42")
        page.get_by_role("link", name="Health").click()
        expect(page.get_by_test_id("switches")).to_contain_text("provider primary switched off")
        row = page.locator('[data-testid="health-row"][data-target="primary/gpt-a"]')
        expect(row.get_by_test_id("switched")).to_have_count(1)
        expect(row).to_contain_text("incident 42")
        shot(page, artifacts, "open-health-switches")
        assert errors == []
