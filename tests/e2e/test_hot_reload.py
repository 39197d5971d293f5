"""Config edits while clients keep sending requests, through a live gw: every valid edit
goes live as the next revision, an invalid one is reported and changes nothing, bursts
and both kinds of save work, and no request fails or sees a mixed revision.

Each revision routes ``chat`` to a different mock model, so a response's ``x-gw-route``
says which config served it; ``x-gw-revision`` must agree. Waits are bounded polls on
/readyz (which reports the live revision), never timed assertions.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until

TEMPLATE = """# gw config under edit: this comment must survive nothing, it is ours
providers: [{{name: mock, kind: mock}}]
routes:
  - name: chat
    targets: [{{provider: mock, model: {model}}}]
"""
BROKEN = TEMPLATE.replace("provider: mock, model", "provider: ghost, model")
BODY = {"model": "chat", "messages": [{"role": "user", "content": "hi"}]}
CLIENTS = 4


class Load:
    """Clients sending requests until stopped; every answer is kept for checking."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stop = threading.Event()
        self.answers: list[tuple[int, str, str]] = []  # (status, revision, route)
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run) for _ in range(CLIENTS)]

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as http:
            while not self.stop.is_set():
                try:
                    answer = http.post("/v1/chat/completions", json=BODY)
                except httpx.HTTPError as error:
                    with self.lock:
                        self.errors.append(type(error).__name__)
                    continue
                record = (
                    answer.status_code,
                    answer.headers.get("x-gw-revision", ""),
                    answer.headers.get("x-gw-route", ""),
                )
                with self.lock:
                    self.answers.append(record)

    def wait_for_answers(self, more: int = 8) -> None:
        """Until the clients have had ``more`` answers (from the current config)."""
        target = len(self.answers) + more
        wait_until(lambda: len(self.answers) >= target, f"{more} more answers", interval=0.02)

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)


@pytest.fixture
def reload_gw(tmp_path: Path) -> Iterator[tuple[GwServer, Path]]:
    config = tmp_path / "gw.yaml"
    config.write_text(TEMPLATE.format(model="rev-a"))
    with GwServer(tmp_path / "state", config) as server:
        yield server, config


def live_revision(gw: GwServer) -> int:
    with gw.client() as http:
        return int(http.get("/readyz").json()["revision"])


def wait_for_revision(gw: GwServer, revision: int) -> None:
    wait_until(
        lambda: live_revision(gw) >= revision,
        lambda: f"revision {revision} to go live:\n{gw.log()}",
    )


def route_served(gw: GwServer) -> str:
    with gw.client() as http:
        return http.post("/v1/chat/completions", json=BODY).headers["x-gw-route"]


def save_by_rename(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text)
    os.replace(temp, path)


def test_edits_under_load_go_live_whole_and_invalid_ones_change_nothing(
    reload_gw: tuple[GwServer, Path],
) -> None:
    gw, config = reload_gw
    start = live_revision(gw)
    with Load(gw.url) as load:
        load.wait_for_answers()
        # A valid edit saved by rename.
        save_by_rename(config, TEMPLATE.format(model="rev-b"))
        wait_for_revision(gw, start + 1)
        load.wait_for_answers()
        # A valid edit written in place.
        config.write_text(TEMPLATE.format(model="rev-c"))
        wait_for_revision(gw, start + 2)
        load.wait_for_answers()
        # An invalid edit: reported, service unchanged.
        config.write_text(BROKEN.format(model="rev-x"))
        wait_until(
            lambda: "config edit not applied" in gw.log(),
            lambda: f"the invalid edit to be reported:\n{gw.log()}",
        )
        assert live_revision(gw) == start + 2
        # A burst of quick writes: the last one wins, as one or more revisions.
        for model in ("rev-d1", "rev-d2", "rev-d3"):
            config.write_text(TEMPLATE.format(model=model))
        wait_until(
            lambda: route_served(gw) == "mock/rev-d3",
            lambda: f"the last of the burst to be served:\n{gw.log()}",
        )
        load.wait_for_answers()

    assert load.errors == []
    assert load.answers, "the clients sent nothing"
    assert {status for status, _, _ in load.answers} == {200}
    # One revision, one config: a response never mixes them.
    models_by_revision: dict[str, set[str]] = {}
    for _, revision, route in load.answers:
        models_by_revision.setdefault(revision, set()).add(route)
    assert all(len(routes) == 1 for routes in models_by_revision.values()), models_by_revision
    assert models_by_revision[str(start)] == {"mock/rev-a"}
    assert models_by_revision[str(start + 1)] == {"mock/rev-b"}
    assert models_by_revision[str(start + 2)] == {"mock/rev-c"}
    assert "routes[0].targets[0].provider" in gw.log()  # the invalid edit's field, logged
    assert "rev-x" not in {route for _, _, route in load.answers}
