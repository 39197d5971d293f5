"""Hostile input against a real gw: a malformed Host or non-HTTP bytes get a JSON 4xx and
only JSON lines on stderr; a 1 MB model name comes back cut; an upstream answer over the
cap is a clear 502; every 429 and 503 says Retry-After; base URLs pointing a key at a
metadata or disguised address are refused, and a loopback one is named (and works, by a
name that resolves to 127.0.0.1)."""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e.gw_process import GwServer, run_cli
from e2e.raw_http import assert_bare_close, connect, read_until_closed
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
server:
  max_concurrency: 1
  queue_timeout: 100ms
  max_upstream_body_bytes: 1MiB
  upstream_buffer_budget: 4MiB
health: {{degraded_after: 1000, unhealthy_after: 1000, error_rate: 1.0, lock_accounts: false}}
providers:
  # A name, not an address: resolved (to 127.0.0.1) and checked when gw connects.
  - {{name: local, kind: openai_compatible, base_url: "http://localhost:{port}/v1"}}
  - {{name: mock, kind: mock}}
routes:
  - name: chat
    targets: [{{provider: local, model: gpt-a}}]
policies:
  - name: once
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 1}}
    fallback: {{enabled: false}}
"""
HI = [{"role": "user", "content": "hi"}]
MAX_ERROR_BODY = 8 * 1024  # what a refusal may weigh, whatever the client sent


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, upstream: FakeOpenAI) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("hostile")
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(port=upstream.port))
    with GwServer(home / "state", config, separate_stderr=True) as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh(upstream: FakeOpenAI) -> Iterator[None]:
    upstream.clear()
    yield
    upstream.clear()


def chat(gw: GwServer, model: str = "chat") -> httpx.Response:
    with gw.client() as http:
        return http.post("/v1/chat/completions", json={"model": model, "messages": HI})


def test_a_name_resolving_to_loopback_is_served(gw: GwServer, upstream: FakeOpenAI) -> None:
    answer = chat(gw)
    assert answer.status_code == 200, answer.text
    assert upstream.count == 1


def test_a_malformed_host_and_non_http_bytes_get_json_4xx(gw: GwServer) -> None:
    for host in (b"127.0.0.1:19310/x", b"127.0.0.1:99999", b"user@127.0.0.1"):
        with connect(gw) as raw:
            raw.sendall(b"GET /v1/models HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
            raw.shutdown(1)  # nothing more: gw answers and closes
            head, _, body = read_until_closed(raw).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), head
        error = json.loads(body)
        assert error["error"]["code"] == "invalid_request"
        assert "Host header" in error["error"]["message"]
        assert error["gw"]["request_id"]
    with connect(gw) as raw:
        raw.sendall(b"GET /v1/models HTTP/1.1\r\nHost: a\x01b\r\n\r\n")
        assert_bare_close(read_until_closed(raw), b"HTTP/1.1 400 Bad Request", "invalid_request")


def test_a_one_megabyte_model_name_comes_back_cut(gw: GwServer) -> None:
    for model in ("m" * 1_000_000, "local/" + "m" * 1_000_000):
        answer = chat(gw, model)
        assert answer.status_code == 404
        assert len(answer.content) < MAX_ERROR_BODY
        body = answer.json()
        assert body["error"]["code"] == "model_not_found"
        assert f"({len(model)} characters)" in body["error"]["message"]
        trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
        assert len(trace["requested_model"]) <= 1024  # MODEL_NAME_MAX_CHARS
        assert len(json.dumps(trace)) < MAX_ERROR_BODY


def test_an_answer_over_the_cap_is_a_clear_502(gw: GwServer, upstream: FakeOpenAI) -> None:
    upstream.enqueue(Behavior(text="x " * (1024 * 1024)))  # a 2 MB answer; the cap is 1 MiB
    answer = chat(gw)
    assert answer.status_code == 502
    error = answer.json()["error"]
    assert error["code"] == "upstream_error"
    assert "the upstream answer is too large: over 1 MiB" in error["message"]
    assert chat(gw).status_code == 200  # the next answer is served as usual


def test_429_and_503_from_gw_carry_retry_after(gw: GwServer, upstream: FakeOpenAI) -> None:
    # An upstream 429 and 529 with no retry-after of their own: gw's answer still says.
    for status, code in ((429, "rate_limited"), (529, "overloaded")):
        upstream.enqueue(Behavior(status=status))
        answer = chat(gw)
        assert answer.json()["error"]["code"] == code
        assert answer.status_code == (429 if status == 429 else 503)
        assert answer.headers["retry-after"] == "1"
    # gw's own admission: one slot (server.max_concurrency), held by a slow answer.
    upstream.clear()
    upstream.enqueue(Behavior(delay_before_headers=3.0))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(chat, gw)
        for _ in range(300):  # bounded: until the first request has reached the upstream
            if upstream.count:
                break
            concurrent.futures.wait([first], timeout=0.05)
        assert upstream.count == 1
        refused = chat(gw)
        assert refused.status_code == 503
        assert refused.json()["error"]["code"] == "overloaded"
        assert refused.headers["retry-after"] == "1"
        assert first.result(timeout=60).status_code == 200


def test_every_stderr_line_is_json(tmp_path: Path) -> None:
    """On a gw of its own, stopped before its stderr is read (the log is written by a
    thread, flushed at exit)."""
    server = GwServer(tmp_path / "state", separate_stderr=True).start()
    try:
        with connect(server) as raw:
            raw.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:1/x\r\n\r\n")
            raw.shutdown(1)
            assert read_until_closed(raw).startswith(b"HTTP/1.1 400 ")
        with connect(server) as raw:
            raw.sendall(b"NOT HTTP AT ALL\x00\r\n\r\n")
            assert read_until_closed(raw).startswith(b"HTTP/1.1 400 ")
    finally:
        assert server.stop() == 0
    assert server.stderr_path is not None
    lines = server.stderr_path.read_text().splitlines()
    records: list[dict[str, Any]] = [json.loads(line) for line in lines]  # each one JSON
    assert any(record["logger"] == "uvicorn.error" for record in records), lines
    assert not any("Traceback" in line for line in lines)


def write_config(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "gw.yaml"
    path.write_text(
        f"providers:\n  - name: p\n    kind: openai_compatible\n    base_url: {base_url}\n"
    )
    return path


@pytest.mark.parametrize(
    ("base_url", "reason"),
    [
        ("http://169.254.169.254/latest", "a cloud metadata service"),
        ("http://metadata.google.internal/v1", "a cloud metadata service"),
        ("http://[fd00:ec2::254]/v1", "a cloud metadata service"),
        ("http://100.100.100.200/v1", "a cloud metadata service"),
        ("http://169.254.7.7/v1", "a link-local address"),
        ("http://[::ffff:169.254.169.254]/v1", "a cloud metadata service"),
        ("http://0x7f000001:8000/v1", "write it as 127.0.0.1"),
        ("http://2130706433:8000/v1", "write it as 127.0.0.1"),
        ("http://0177.0.0.1:8000/v1", "write it as 127.0.0.1"),
        ("http://127.1:8000/v1", "write it as 127.0.0.1"),
    ],
)
def test_config_validate_refuses_metadata_and_disguised_base_urls(
    tmp_path: Path, base_url: str, reason: str
) -> None:
    path = write_config(tmp_path, base_url)
    done = run_cli("config", "validate", str(path), check=False)
    assert done.returncode != 0
    assert f"{path}:4: providers[0].base_url: " in done.stderr
    assert reason in done.stderr
    as_json = json.loads(run_cli("config", "validate", str(path), "--json", check=False).stdout)
    assert (as_json["valid"], as_json["field"], as_json["line"]) == (
        False,
        "providers[0].base_url",
        4,
    )


def test_config_validate_names_loopback_and_private_providers(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(
        "providers:\n"
        "  - {name: ollama, kind: openai_compatible, base_url: 'http://127.0.0.1:11434/v1'}\n"
        "  - {name: lan, kind: openai_compatible, base_url: 'http://192.168.1.20:8000/v1'}\n"
        "  - {name: cloud, kind: openai_compatible, base_url: 'https://api.example.com/v1'}\n"
    )
    done = run_cli("config", "validate", str(path))
    assert (
        "on loopback or private addresses: ollama (loopback 127.0.0.1), lan (private 192.168.1.20)"
    ) in done.stdout
    local = json.loads(run_cli("config", "validate", str(path), "--json").stdout)
    assert local["local_upstreams"] == [
        {"provider": "ollama", "host": "127.0.0.1", "kind": "loopback"},
        {"provider": "lan", "host": "192.168.1.20", "kind": "private"},
    ]
