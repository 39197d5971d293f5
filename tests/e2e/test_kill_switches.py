"""Kill switches (`gw switch`) on a real gw in open mode, under load, with fake OpenAI
upstreams that count their calls.

A provider switched off by the CLI while two clients keep asking: every request is
answered, none reaches the provider once a client has seen the new revision, and the
switch is audited (who, when, why) in `gw switch list`, `gw config history`, `gw health`
and `gw explain`; switched back on, traffic returns. A route switched off is 503
`no_route` with the reason; a breaker forced open is never called, one forced closed is
tried although health would skip it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI

pytestmark = pytest.mark.e2e

CONFIG = """
providers:
  - {{name: a, kind: openai_compatible, base_url: "{a}"}}
  - {{name: b, kind: openai_compatible, base_url: "{b}"}}
routes:
  - name: chat
    targets:
      - {{provider: a, model: gpt-a, priority: 1}}
      - {{provider: b, model: gpt-b, priority: 2}}
  - name: other
    targets: [{{provider: b, model: gpt-b}}]
policies:
  - name: quick
    retry: {{max_attempts: 1}}
    timeout: {{total: 20s, per_attempt: 10s}}
health: {{degraded_after: 2, unhealthy_after: 2, error_rate: 1.0, cooldown: 1h, max_cooldown: 1h}}
"""
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def gw(tmp_path: Path, primary: FakeOpenAI, backup: FakeOpenAI) -> Iterator[GwServer]:
    primary.clear()
    backup.clear()
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG.format(a=primary.base_url, b=backup.base_url))
    with GwServer(tmp_path / "state", config) as server:
        yield server


class Load:
    """Two clients asking route chat one request after another until stopped; each
    answer is kept as (worker, status, revision, answered by)."""

    def __init__(self, gw: GwServer) -> None:
        self.gw = gw
        self.answers: list[tuple[int, int, int, str]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(n,)) for n in (0, 1)]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _run(self, worker: int) -> None:
        with httpx.Client(base_url=self.gw.url, timeout=30) as client:
            while not self._stop.is_set():
                answer = client.post("/v1/chat/completions", json={"model": "chat", "messages": HI})
                revision = int(answer.headers.get("x-gw-revision", "0"))
                route = answer.headers.get("x-gw-route", "-")
                self.answers.append((worker, answer.status_code, revision, route))

    def since(self, revision: int) -> list[tuple[int, int, int, str]]:
        return [answer for answer in list(self.answers) if answer[2] >= revision]

    def each_worker_saw(self, revision: int, count: int) -> bool:
        seen = self.since(revision)
        return all(sum(1 for a in seen if a[0] == worker) >= count for worker in (0, 1))


def switch(gw: GwServer, *args: str) -> dict[str, Any]:
    answer: dict[str, Any] = gw.cli_json("switch", *args)
    return answer


def test_a_provider_switched_off_under_load_gets_no_request_and_none_fails(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    with Load(gw) as load:
        wait_until(
            lambda: sum(1 for a in load.answers if a[3] == "a/gpt-a") >= 10,
            lambda: f"answers from a: {load.answers[-5:]}",
        )
        off = switch(gw, "off", "provider", "a", "--reason", "incident 42")
        revision = off["revision"]
        assert off["changed"] is True
        assert off["switch"]["says"].startswith("provider a switched off by local-admin at ")
        # Each client sends one request at a time: once both have an answer from the new
        # revision, no request of an older one is still in flight.
        wait_until(lambda: load.each_worker_saw(revision, 1), "both clients on the new revision")
        calls = primary.count
        wait_until(lambda: load.each_worker_saw(revision, 15), "more answers on the new revision")
        assert primary.count == calls  # nothing reached provider a after the revision
        assert {a[3] for a in load.since(revision)} == {"b/gpt-b"}

        on = switch(gw, "on", "provider", "a")
        assert on["changed"] is True
        assert on["switch"] is None
        wait_until(
            lambda: any(a[3] == "a/gpt-a" for a in load.since(on["revision"])),
            "traffic back on provider a",
        )
    assert {a[1] for a in load.answers} == {200}, "a request failed because of the switch"

    history = gw.cli_json("config", "history")
    audited = {entry["revision"]: entry for entry in history}
    assert audited[revision]["actor"] == "local-admin"
    assert audited[revision]["reason"] == "incident 42"
    assert audited[on["revision"]]["actor"] == "local-admin"
    assert audited[on["revision"]]["source"] == "admin"


def test_explain_health_and_list_say_who_switched_what_and_why(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    switch(gw, "off", "target", "a/gpt-a", "--route", "chat", "--reason", "bad answers")
    with httpx.Client(base_url=gw.url) as client:
        answer = client.post("/v1/chat/completions", json={"model": "chat", "messages": HI})
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == "b/gpt-b"
    explained = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    rejected = {
        c["provider"]: c for c in explained["decision"]["candidates"] if c["rejected"] is not None
    }
    assert rejected["a"]["rejected"] == "switched_off"
    assert "target a/gpt-a in route chat switched off by local-admin" in rejected["a"]["detail"]
    assert rejected["a"]["detail"].endswith(": bad answers")
    assert primary.count == 0

    listed = switch(gw, "list")["switches"]
    assert [(s["route"], s["target"], s["state"], s["by"], s["reason"]) for s in listed] == [
        ("chat", "a/gpt-a", "disabled", "local-admin", "bad answers")
    ]
    assert listed[0]["at"].endswith("Z")
    health = gw.cli("health").stdout
    assert "Switches in force" in health
    assert "target a/gpt-a in route chat switched off" in health
    switched = {t["provider"]: t["switched"] for t in gw.cli_json("health")["targets"]}
    assert switched["a"].endswith("bad answers")
    assert switched["b"] is None
    table = gw.cli("switch", "list").stdout
    assert "bad answers" in table


def test_a_route_switched_off_is_503_with_the_reason(gw: GwServer) -> None:
    switch(gw, "off", "route", "other", "--reason", "maintenance until noon")
    with httpx.Client(base_url=gw.url) as client:
        refused = client.post("/v1/chat/completions", json={"model": "other", "messages": HI})
        served = client.post("/v1/chat/completions", json={"model": "chat", "messages": HI})
    assert refused.status_code == 503
    error = refused.json()["error"]
    assert error["code"] == "no_route"
    assert "route other switched off by local-admin" in error["message"]
    assert "maintenance until noon" in error["message"]
    assert refused.headers["retry-after"].isdigit()
    assert served.status_code == 200
    switch(gw, "on", "route", "other")
    with httpx.Client(base_url=gw.url) as client:
        back = client.post("/v1/chat/completions", json={"model": "other", "messages": HI})
    assert back.status_code == 200


def test_breakers_forced_open_and_closed(gw: GwServer, primary: FakeOpenAI) -> None:
    def ask() -> httpx.Response:
        with httpx.Client(base_url=gw.url) as client:
            return client.post("/v1/chat/completions", json={"model": "chat", "messages": HI})

    switch(gw, "breaker", "a/gpt-a", "open", "--reason", "drill")
    assert ask().headers["x-gw-route"] == "b/gpt-b"
    assert primary.count == 0
    switch(gw, "breaker", "a/gpt-a", "auto")
    assert ask().headers["x-gw-route"] == "a/gpt-a"

    # Two failures open a's breaker (health: unhealthy_after 2, cooldown 1h): skipped.
    primary.enqueue(Behavior(status=500), Behavior(status=500))
    for _ in range(2):
        assert ask().headers["x-gw-route"] == "b/gpt-b"
    calls = primary.count
    assert ask().headers["x-gw-route"] == "b/gpt-b"
    assert primary.count == calls  # its breaker is open
    switch(gw, "breaker", "a/gpt-a", "closed", "--reason", "it is fixed, trust me")
    assert ask().headers["x-gw-route"] == "a/gpt-a"


def test_bad_switches_are_refused_with_the_field_and_reason(gw: GwServer) -> None:
    unknown = gw.cli("switch", "off", "provider", "nope", "--reason", "x", check=False)
    assert unknown.returncode != 0
    assert "switches[0].provider: unknown provider 'nope'" in unknown.stderr
    no_reason = gw.cli("switch", "off", "provider", "a", check=False)
    assert no_reason.returncode != 0
    assert "say why: --reason" in no_reason.stderr
    nothing = switch(gw, "on", "provider", "a")
    assert nothing["changed"] is False
    assert gw.cli_json("switch", "list")["switches"] == []
