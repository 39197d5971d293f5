"""Issue 5, "stay up when upstreams don't", through a live gw on loopback.

Admission sheds a burst instead of hanging, retries and fallbacks stay bounded under a
storm, hedging races a slow target, ``lowest_latency`` moves traffic to the faster
target, a lone degraded target is still served, a client that hangs up mid-stream closes
the upstream call, and active probes find a failing provider with no client traffic.

The machine running this is slow and noisy: every ordering here is decided by scripted
faults or by margins of seconds against tenths of seconds, never by close timings, and
nothing asserts how long anything took. Waits are bounded polls with generous limits.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI

HI: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
WAIT_S = 30.0  # the bound of every poll: generous, as this machine is slow and shared
CLIENT_TIMEOUT_S = 60.0  # no request may hang: each one gets an answer within this

# One gw for scenarios 2-6, a route (and fakes of its own) each. A target is degraded
# after 3 consecutive failures (only reordered, still tried) and no breaker ever opens:
# unhealthy_after is out of reach and no failure share is above an error_rate of 1.0. The
# retry budget is out of reach too (tests/e2e/test_upstream_protection.py tests it), so
# max_attempts alone bounds the storm.
MAIN_CONFIG = """
health:
  degraded_after: 3
  unhealthy_after: 1000
  error_rate: 1.0
  lock_accounts: false
  retry_budget: {{ratio: 1.0, min_retries: 1000}}
providers:
  - {{name: storm-a, kind: openai_compatible, base_url: "{storm_a}"}}
  - {{name: storm-b, kind: openai_compatible, base_url: "{storm_b}"}}
  - {{name: slow, kind: openai_compatible, base_url: "{slow}"}}
  - {{name: quick, kind: openai_compatible, base_url: "{quick}"}}
  - {{name: lag, kind: openai_compatible, base_url: "{lag}"}}
  - {{name: brisk, kind: openai_compatible, base_url: "{brisk}"}}
  - {{name: lone, kind: openai_compatible, base_url: "{lone}"}}
  - {{name: talker, kind: openai_compatible, base_url: "{talker}"}}
models:  # a catalog entry, so that the only note on lone's decisions is about its health
  - {{provider: lone, model: gpt-lone, context_window: 128000}}
routes:
  - name: storm
    targets:
      - {{provider: storm-a, model: gpt-a, priority: 1}}
      - {{provider: storm-b, model: gpt-b, priority: 2}}
  - name: hedged
    targets:
      - {{provider: slow, model: gpt-slow, priority: 1}}
      - {{provider: quick, model: gpt-quick, priority: 2}}
  - name: quickest
    strategy: lowest_latency
    targets:
      - {{provider: lag, model: gpt-lag, priority: 1}}
      - {{provider: brisk, model: gpt-brisk, priority: 2}}
  - name: lone
    targets:
      - {{provider: lone, model: gpt-lone}}
  - name: talk
    targets:
      - {{provider: talker, model: gpt-talk}}
policies:
  - name: storm
    match: {{routes: [storm]}}
    retry: {{max_attempts: 2, initial_backoff: 10ms}}
  - name: hedge
    match: {{routes: [hedged]}}
    retry: {{max_attempts: 1}}
    hedge: {{after: 100ms}}
  - name: once
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 1}}
"""
MAIN_FAKES = ("storm_a", "storm_b", "slow", "quick", "lag", "brisk", "lone", "talker")

ADMISSION_CONFIG = """
server: {max_concurrency: 2, queue_timeout: 300ms}
providers:
  - {name: sleepy, kind: mock, mock: {latency: 3s}}
routes:
  - name: sleepy
    targets:
      - {provider: sleepy, model: sleepy-1}
"""

PROBE_CONFIG = """
health: {{degraded_after: 3, unhealthy_after: 1000, error_rate: 1.0}}
providers:
  - name: flaky
    kind: openai_compatible
    base_url: "{flaky}"
    probe: {{interval: 200ms, timeout: 2s}}
routes:
  - name: probed
    targets:
      - {{provider: flaky, model: gpt-probed}}
"""


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, FakeOpenAI]]:
    started: dict[str, FakeOpenAI] = {}
    try:
        for name in MAIN_FAKES:
            started[name] = FakeOpenAI().start()
        yield started
    finally:
        for fake in started.values():
            fake.stop()


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, FakeOpenAI]
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("resilience")
    config = home / "gw.yaml"
    config.write_text(MAIN_CONFIG.format(**{n: f.base_url for n, f in fakes.items()}))
    with GwServer(home / "state", config) as server:
        yield server


def start_gw(home: Path, config_text: str) -> GwServer:
    home.mkdir(parents=True, exist_ok=True)
    config = home / "gw.yaml"
    config.write_text(config_text)
    return GwServer(home / "state", config)


def post_chat(http: httpx.Client, model: str, **extra: Any) -> httpx.Response:
    return http.post("/v1/chat/completions", json={"model": model, "messages": HI, **extra})


def fresh(fakes: dict[str, FakeOpenAI], *names: str) -> list[FakeOpenAI]:
    """The named fakes, emptied and back to answering normally, so that each test stands
    alone whatever ran before it."""
    picked = [fakes[name] for name in names]
    for fake in picked:
        fake.clear()
        fake.default = Behavior()
    return picked


def outcomes(explained: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(a["provider"], a["outcome"], a["hedge"]) for a in explained["attempts"]]


def test_a_burst_past_the_admission_cap_is_shed_fast_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    """2 slots, a 300 ms queue, answers that take 3 s: of 8 requests at once, those that
    get no slot are told 503 overloaded instead of waiting; liveness is not admitted."""
    with start_gw(tmp_path / "admission", ADMISSION_CONFIG) as server:
        burst = 8
        barrier = threading.Barrier(burst)
        answers: list[httpx.Response | BaseException] = []
        lock = threading.Lock()

        def ask() -> None:
            with httpx.Client(base_url=server.url, timeout=CLIENT_TIMEOUT_S) as http:
                barrier.wait(timeout=WAIT_S)
                try:
                    answer: httpx.Response | BaseException = post_chat(http, "sleepy")
                except httpx.HTTPError as exc:
                    answer = exc
            with lock:
                answers.append(answer)

        def shed() -> bool:
            with lock:
                return any(isinstance(a, httpx.Response) and a.status_code == 503 for a in answers)

        threads = [threading.Thread(target=ask) for _ in range(burst)]
        for thread in threads:
            thread.start()
        try:
            # A 503 means both slots were taken by 3 s answers when the queue gave up.
            wait_until(shed, "a request shed with 503", timeout=CLIENT_TIMEOUT_S)
            with server.client() as http:
                assert http.get("/livez").status_code == 200
        finally:
            for thread in threads:
                thread.join(CLIENT_TIMEOUT_S + WAIT_S)
        assert not any(thread.is_alive() for thread in threads)

        assert len(answers) == burst
        hung = [a for a in answers if not isinstance(a, httpx.Response)]
        assert hung == []
        responses = [a for a in answers if isinstance(a, httpx.Response)]
        ok = [r for r in responses if r.status_code == 200]
        overloaded = [
            r
            for r in responses
            if r.status_code == 503 and r.json()["error"]["code"] == "overloaded"
        ]
        assert len(ok) + len(overloaded) == burst, [(r.status_code, r.text) for r in responses]
        assert len(ok) >= 2
        assert len(overloaded) >= 1
        assert all("x-gw-queue-ms" in r.headers for r in ok)
        assert all(r.headers.get("x-gw-request-id") for r in responses)
        for response in responses:  # every request, shed or served, is traced
            explained = server.wait_for_trace(response.headers["x-gw-request-id"], WAIT_S)
            assert explained["status"] == response.status_code
            if response.status_code == 503:
                assert explained["error"]["code"] == "overloaded"
                assert explained["attempts"] == []
            else:
                assert explained["answered_by"]["provider"] == "sleepy"


def test_a_retry_storm_is_bounded_by_attempts_times_targets(
    gw: GwServer, fakes: dict[str, FakeOpenAI]
) -> None:
    """Both targets answer 500 to everything: each request makes exactly 2 attempts on
    each target (max_attempts 2, then fallback) and fails with 502, however many clients
    push at once."""
    storm_a, storm_b = fresh(fakes, "storm_a", "storm_b")
    for fake in (storm_a, storm_b):
        fake.default = Behavior(status=500)
    clients, per_client = 10, 3

    def client_run() -> list[httpx.Response]:
        with httpx.Client(base_url=gw.url, timeout=CLIENT_TIMEOUT_S) as http:
            return [post_chat(http, "storm") for _ in range(per_client)]

    with ThreadPoolExecutor(max_workers=clients) as pool:
        runs = [pool.submit(client_run) for _ in range(clients)]
        responses = [r for run in runs for r in run.result(timeout=CLIENT_TIMEOUT_S * per_client)]

    assert len(responses) == clients * per_client
    assert {r.status_code for r in responses} == {502}
    assert {r.json()["error"]["code"] for r in responses} == {"upstream_error"}
    for response in responses:
        attempts = response.json()["gw"]["attempts"]
        assert sorted(a["provider"] for a in attempts) == ["storm-a"] * 2 + ["storm-b"] * 2
        assert [a["upstream_status"] for a in attempts] == [500] * 4
    assert (storm_a.count, storm_b.count) == (60, 60)  # 30 requests x 2 attempts, each
    assert storm_a.count + storm_b.count == clients * per_client * 2 * 2


def test_hedging_answers_from_the_backup_when_the_first_target_is_slow(
    gw: GwServer, fakes: dict[str, FakeOpenAI]
) -> None:
    """hedge.after 100ms against a first target that takes 5 s to answer: the backup is
    started alongside and its answer wins; the slow attempt is cancelled as hedge_lost."""
    slow, quick = fresh(fakes, "slow", "quick")
    slow.enqueue(Behavior(delay_before_headers=5.0, text="from the slow one"))
    quick.enqueue(Behavior(text="from the quick one"))
    with gw.client() as http:
        answer = post_chat(http, "hedged")
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == "quick/gpt-quick"
    assert answer.json()["choices"][0]["message"]["content"] == "from the quick one"
    explained = gw.wait_for_trace(answer.headers["x-gw-request-id"], WAIT_S)
    assert explained["decision"]["policy"] == "hedge"
    assert explained["answered_by"]["provider"] == "quick"
    assert sorted(outcomes(explained)) == [
        ("quick", "answered", True),
        ("slow", "hedge_lost", False),
    ]
    assert (slow.count, quick.count) == (1, 1)


def test_a_stream_on_a_hedged_route_is_never_hedged(
    gw: GwServer, fakes: dict[str, FakeOpenAI]
) -> None:
    """The first target takes 2 s, twenty times the hedge delay: a stream still waits for
    it, and the backup is never called (two streams cannot be raced without sending both)."""
    slow, quick = fresh(fakes, "slow", "quick")
    slow.enqueue(Behavior(delay_before_headers=2.0, text="streamed slowly"))
    client = openai.OpenAI(base_url=gw.base_url, api_key="unused", max_retries=0, timeout=60)
    with client.chat.completions.create(model="hedged", messages=HI, stream=True) as stream:
        request_id = stream.response.headers["x-gw-request-id"]
        assert stream.response.headers["x-gw-route"] == "slow/gpt-slow"
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "streamed slowly"
    explained = gw.wait_for_trace(request_id, WAIT_S)
    assert explained["decision"]["policy"] == "hedge"
    assert outcomes(explained) == [("slow", "answered", False)]
    assert (slow.count, quick.count) == (1, 0)


def test_lowest_latency_moves_traffic_to_the_faster_target(
    gw: GwServer, fakes: dict[str, FakeOpenAI]
) -> None:
    """``lag`` takes 2 s on every call, ``brisk`` answers at once. An unobserved target
    is tried first (by priority) so that it gets measured: ``lag`` answers the first
    request, ``brisk`` the second; from then on every request goes to ``brisk``."""
    lag, brisk = fresh(fakes, "lag", "brisk")
    lag.default = Behavior(delay_before_headers=2.0)
    with gw.client() as http:
        warm = [post_chat(http, "quickest") for _ in range(2)]
        assert [r.status_code for r in warm] == [200, 200]
        assert [r.headers["x-gw-route"] for r in warm] == ["lag/gpt-lag", "brisk/gpt-brisk"]
        assert (lag.count, brisk.count) == (1, 1)

        routes = []
        for _ in range(5):
            answer = post_chat(http, "quickest")
            assert answer.status_code == 200
            routes.append(answer.headers["x-gw-route"])
    assert routes == ["brisk/gpt-brisk"] * 5
    assert (lag.count, brisk.count) == (1, 6)
    decision = gw.wait_for_trace(answer.headers["x-gw-request-id"], WAIT_S)["decision"]
    assert decision["strategy"] == "lowest_latency"
    assert decision["chain"] == ["brisk/gpt-brisk", "lag/gpt-lag"]
    score = {c["provider"]: c["score"] for c in decision["candidates"]}
    assert score["brisk"] < score["lag"]
    assert score["lag"] >= 2000  # ms: what lag's one answer took, at least its delay


def test_the_only_target_is_still_served_while_degraded_and_says_so(
    gw: GwServer, fakes: dict[str, FakeOpenAI]
) -> None:
    """A lone target that failed 3 times in a row is degraded: ordered last, which for a
    single target changes nothing. It is not rejected, the decision is not relaxed
    (``degraded`` is for relaxed filters), and a note says why it was ordered last."""
    (lone,) = fresh(fakes, "lone")
    lone.enqueue(*[Behavior(status=500)] * 3)
    with gw.client() as http:
        failed = [post_chat(http, "lone") for _ in range(3)]
        assert [r.status_code for r in failed] == [502] * 3
        served = post_chat(http, "lone")
        assert served.status_code == 200
        assert served.headers["x-gw-route"] == "lone/gpt-lone"
        recovered = post_chat(http, "lone")
        assert recovered.status_code == 200
    assert lone.count == 5

    explained = gw.wait_for_trace(served.headers["x-gw-request-id"], WAIT_S)
    decision = explained["decision"]
    assert decision["chain"] == ["lone/gpt-lone"]
    assert decision["degraded"] is False
    assert decision["degraded_reasons"] == []
    assert decision["notes"] == [
        "lone/gpt-lone ordered last: degraded: 3 consecutive failures (degraded from 3)"
    ]
    (candidate,) = decision["candidates"]
    assert (candidate["rank"], candidate["rejected"], candidate["relaxed"]) == (0, None, False)
    assert outcomes(explained) == [("lone", "answered", False)]

    # Its answer reset the failure count: the next decision has nothing to note.
    after = gw.wait_for_trace(recovered.headers["x-gw-request-id"], WAIT_S)["decision"]
    assert after["notes"] == []


def test_a_client_hanging_up_mid_stream_closes_the_upstream_stream(
    gw: GwServer, fakes: dict[str, FakeOpenAI]
) -> None:
    """The upstream would stream 60 words, one every 0.2 s (12 s). The client reads the
    first word and leaves: gw traces client_aborted (499) and closes its upstream call,
    which the fake sees as a connection closed before its stream ended."""
    (talker,) = fresh(fakes, "talker")
    words = " ".join(f"w{i}" for i in range(60))
    talker.enqueue(Behavior(text=words, delay_between_chunks=0.2))
    client = openai.OpenAI(base_url=gw.base_url, api_key="unused", max_retries=0, timeout=60)
    stream = client.chat.completions.create(model="talk", messages=HI, stream=True)
    with stream:
        request_id = stream.response.headers["x-gw-request-id"]
        first = next(
            c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content
        )
    assert first == "w0"

    explained = gw.wait_for_trace(request_id, WAIT_S)
    assert explained["status"] == 499
    assert explained["error"]["code"] == "client_aborted"
    assert outcomes(explained) == [("talker", "aborted", False)]
    wait_until(lambda: talker.disconnects == 1, "the upstream stream to be closed by gw")
    assert talker.count == 1


def test_probes_find_a_failing_provider_with_no_client_traffic(tmp_path: Path) -> None:
    """Every answer of ``flaky`` is a 500. No client calls it; the probes alone (a
    one-token chat every 200 ms) degrade it after 3 failures, as the admin API shows."""
    with FakeOpenAI() as flaky:
        flaky.default = Behavior(status=500)
        config = PROBE_CONFIG.format(flaky=flaky.base_url)
        with start_gw(tmp_path / "probes", config) as server, server.client() as http:
            seen: dict[str, Any] = {}

            def probed_degraded() -> bool:
                report = http.get("/admin/v1/health")
                assert report.status_code == 200
                (target,) = [t for t in report.json()["targets"] if t["provider"] == "flaky"]
                seen.update(target)
                return target["last_probe_ok"] is False and target["status"] == "degraded"

            wait_until(probed_degraded, "the probes to degrade flaky/gpt-probed")
            assert seen["model"] == "gpt-probed"
            assert seen["routes"] == ["probed"]
            assert seen["breaker"] == "closed"  # probes degrade, never open a breaker
            assert seen["consecutive_failures"] == 3
            assert seen["window_calls"] == 0  # no live traffic at all
            traces = server.cli_json("traces")
            assert [t for t in traces if t.get("route") == "probed"] == []

        probes = flaky.requests
        assert len(probes) >= 3
        for probe in probes:
            assert (probe.method, probe.path) == ("POST", "/v1/chat/completions")
            assert probe.json["model"] == "gpt-probed"
            assert probe.json["max_tokens"] == 1
            assert "max_completion_tokens" not in probe.json
            assert probe.json.get("stream") in (None, False)
