"""Large configs through a live gw: a reload of 5,000 routes while a client sends requests
one at a time (every request answered, then the new revision served), a file over the
size limit refused with a clear error while requests go on, and a lowered
``prune_interval`` taking effect at once. How long a reload delays a request is measured
by ``scripts/bench --reload-stall``, not here: these tests assert no timing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.reload_stall import large_config

from e2e.gw_process import GwServer
from e2e.waiting import wait_until

WAIT_S = 120.0  # a 5,000-route reload on a loaded 2-core machine takes seconds
SMALL = """\
providers: [{name: p0, kind: mock}]
routes:
  - {name: route-0, targets: [{provider: p0, model: m0}]}
"""
BODY = {"model": "route-0", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def small_gw(tmp_path: Path) -> Iterator[tuple[GwServer, Path]]:
    config = tmp_path / "gw.yaml"
    config.write_text(SMALL)
    with GwServer(tmp_path / "state", config) as server:
        yield server, config


def status(gw: GwServer) -> dict[str, Any]:
    with gw.client() as http:
        answer = http.get("/admin/v1/status")
        answer.raise_for_status()
        return answer.json()  # type: ignore[no-any-return]


def test_a_reload_of_5000_routes_answers_every_request_then_serves_the_new_revision(
    small_gw: tuple[GwServer, Path],
) -> None:
    gw, config = small_gw
    answers: list[tuple[int, str, str]] = []  # (status, revision, route)
    with httpx.Client(base_url=gw.url, timeout=60) as http:

        def send() -> tuple[int, str, str]:
            answer = http.post("/v1/chat/completions", json=BODY)
            record = (
                answer.status_code,
                answer.headers["x-gw-revision"],
                answer.headers["x-gw-route"],
            )
            answers.append(record)
            return record

        _, first, _ = send()
        config.write_text(large_config(5000, model_suffix="-next"))
        wait_until(lambda: send()[1] != first, "the 5,000-route revision went live", WAIT_S)
        for _ in range(5):
            send()
    assert {status for status, _, _ in answers} == {200}, answers[-5:]
    routes: dict[str, set[str]] = {}
    for _, revision, route in answers:
        routes.setdefault(revision, set()).add(route)
    assert routes.pop(first) == {"p0/m0"}
    assert list(routes.values()) == [{"p0/m0-next"}]  # one new revision, whole
    report = status(gw)
    assert report["config"]["error"] is None
    assert report["config"]["reloads"] == 1


def test_a_config_over_the_size_limit_is_refused_while_requests_go_on(
    small_gw: tuple[GwServer, Path],
) -> None:
    gw, config = small_gw
    stop, statuses = threading.Event(), []

    def client() -> None:
        with httpx.Client(base_url=gw.url, timeout=60) as http:
            while not stop.is_set():
                statuses.append(http.post("/v1/chat/completions", json=BODY).status_code)

    worker = threading.Thread(target=client)
    worker.start()
    try:
        revision = status(gw)["revision"]
        config.write_text(large_config(100_000))  # 12.5 MiB, over the 8 MiB default
        error = wait_until(
            lambda: status(gw)["config"]["error"], "the refusal was reported", WAIT_S
        )
        wait_until(lambda: len(statuses) > 3, "requests answered after the refusal", WAIT_S)
    finally:
        stop.set()
        worker.join(timeout=60)
    assert str(config) in error
    assert "the file is 12.5 MiB, over the 8MiB limit on a config file" in error
    assert "GW_MAX_CONFIG_BYTES" in error
    assert status(gw)["revision"] == revision
    assert set(statuses) == {200}
    assert "config edit not applied" in gw.log()


def test_a_larger_limit_from_the_environment_lets_the_file_load(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(SMALL)
    env = {"GW_MAX_CONFIG_BYTES": "16MiB"}
    with GwServer(tmp_path / "state", config, env=env) as gw:
        revision = status(gw)["revision"]
        config.write_text(SMALL.replace("m0", "m1") + "# " + "x" * (9 * 1024 * 1024) + "\n")
        wait_until(lambda: status(gw)["revision"] > revision, "the padded file went live", WAIT_S)
        assert status(gw)["config"]["error"] is None


def test_a_lowered_prune_interval_takes_effect_at_once(tmp_path: Path) -> None:
    """The first pruning round runs ~5 s after start, the next one prune_interval (1 h)
    later; lowered to 1 s by a reload, the next round follows within about a second,
    not after the hour the old wait had left."""
    config = tmp_path / "gw.yaml"
    config.write_text(SMALL + "state: {prune_interval: 1h}\n")
    with GwServer(tmp_path / "state", config) as gw:
        wait_until(lambda: status(gw)["store"]["prune_rounds"] == 1, "the first round", 60)
        config.write_text(SMALL + "state: {prune_interval: 1s}\n")
        wait_until(
            lambda: status(gw)["store"]["prune_rounds"] >= 3, "rounds at the new interval", WAIT_S
        )
