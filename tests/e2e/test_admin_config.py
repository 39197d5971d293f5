"""The config admin API against a real gw: writes land in the YAML file with its comments
kept, If-Match makes racing writers safe, reads never show a secret, and the route
preview decides without calling an upstream."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gw.config import load_config

from e2e.gw_process import GwServer
from fakes.openai_upstream import FakeOpenAI

pytestmark = pytest.mark.e2e

CONFIG = """\
# The team's gateway. Keep this comment.
providers:
  - name: fake   # the fake upstream
    kind: openai_compatible
    base_url: "{base_url}"
    api_key: env:FAKE_KEY
    headers: {{x-team-id: hunter2-secret}}

routes:
  # Clients ask for "chat".
  - name: chat
    targets:
      - {{provider: fake, model: gpt-a}}

policies:
  - name: default   # applies everywhere
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 1}}
"""
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as upstream:
        yield upstream


@pytest.fixture
def gw(tmp_path: Path, fake: FakeOpenAI) -> Iterator[GwServer]:
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG.format(base_url=fake.base_url))
    with GwServer(tmp_path / "state", config, env={"FAKE_KEY": "sk-fake-0123"}) as server:
        yield server


def revision(gw: GwServer) -> int:
    with gw.client() as client:
        return int(client.get("/admin/v1/config").json()["revision"])


def fast_route(name: str, model: str = "gpt-fast") -> dict[str, Any]:
    return {"name": name, "strategy": "priority", "targets": [{"provider": "fake", "model": model}]}


def test_put_route_is_live_and_written_back_with_comments(gw: GwServer, fake: FakeOpenAI) -> None:
    before = revision(gw)
    with gw.client() as client:
        put = client.put("/admin/v1/routes/fast", json=fast_route("fast"))
        assert put.status_code == 201, put.text
        assert put.json()["revision"] == before + 1
        assert put.headers["x-gw-revision"] == str(before + 1)
        chat = client.post("/v1/chat/completions", json={"model": "fast", "messages": HI})
        assert chat.status_code == 200, chat.text
        assert chat.headers["x-gw-revision"] == str(before + 1)
        again = client.put("/admin/v1/routes/fast", json=fast_route("fast", "gpt-b"))
        assert again.status_code == 200
    assert gw.config is not None
    text = gw.config.read_text()
    assert "# The team's gateway. Keep this comment." in text
    assert '# Clients ask for "chat".' in text
    assert "# applies everywhere" in text
    assert text.index("name: chat") < text.index("name: fast") < text.index("policies:")
    config = load_config(text, "written")
    assert [route.name for route in config.routes] == ["chat", "fast"]
    assert config.routes[1].targets[0].model == "gpt-b"


def test_post_existing_name_conflicts(gw: GwServer) -> None:
    with gw.client() as client:
        answer = client.post("/admin/v1/routes", json=fast_route("chat"))
        assert answer.status_code == 409
        assert answer.json()["error"]["code"] == "conflict"
        created = client.post("/admin/v1/policies", json={"name": "strict", "priority": 5})
        assert created.status_code == 201, created.text


def test_racing_writers_with_the_same_if_match(gw: GwServer) -> None:
    current = str(revision(gw))
    statuses: list[int] = []

    def write(name: str) -> None:
        with gw.client() as client:
            answer = client.put(
                f"/admin/v1/routes/{name}", json=fast_route(name), headers={"if-match": current}
            )
            statuses.append(answer.status_code)

    threads = [threading.Thread(target=write, args=(f"racer{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201, 412]
    with gw.client() as client:
        stale = client.delete("/admin/v1/routes/chat", headers={"if-match": current})
        assert stale.status_code == 412
        assert stale.json()["error"]["code"] == "precondition_failed"


def test_invalid_write_is_refused_and_the_file_untouched(gw: GwServer) -> None:
    assert gw.config is not None
    before = gw.config.read_bytes()
    with gw.client() as client:
        bad = {"name": "bad", "targets": [{"provider": "nowhere", "model": "m"}]}
        answer = client.put("/admin/v1/routes/bad", json=bad)
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert error["code"] == "invalid_request"
        assert "routes[1].targets[0].provider" in error["message"]
        unknown = client.put("/admin/v1/routes/bad", json={"name": "bad", "colour": "red"})
        assert unknown.status_code == 400
    assert gw.config.read_bytes() == before


def test_delete_and_reload(gw: GwServer) -> None:
    with gw.client() as client:
        assert client.put("/admin/v1/routes/gone", json=fast_route("gone")).status_code == 201
        deleted = client.delete("/admin/v1/routes/gone")
        assert deleted.status_code == 200, deleted.text
        assert client.delete("/admin/v1/routes/gone").status_code == 404
        assert client.delete("/admin/v1/policies/nope").status_code == 404
        chat = client.post("/v1/chat/completions", json={"model": "gone", "messages": HI})
        assert chat.status_code == 404
        reload = client.post("/admin/v1/reload")
        assert reload.status_code == 200
        assert reload.json()["status"]["error"] is None
        assert gw.config is not None
        gw.config.write_text(gw.config.read_text() + "\nbogus_section: 1\n")
        broken = client.post("/admin/v1/reload").json()
        assert broken["applied"] is False
        assert "bogus_section" in broken["status"]["error"]
        assert "bogus_section" in client.get("/admin/v1/config").json()["status"]["error"]
    assert "name: gone" not in gw.config.read_text()


def test_reads_show_no_secret(gw: GwServer) -> None:
    with gw.client() as client:
        config = client.get("/admin/v1/config")
        providers = client.get("/admin/v1/providers").json()["providers"]
        routes = client.get("/admin/v1/routes").json()["routes"]
        policies = client.get("/admin/v1/policies").json()["policies"]
    assert config.status_code == 200
    body = config.text
    assert "hunter2" not in body
    assert "sk-fake" not in body
    assert providers[0]["headers"] == {"x-team-id": "***"}
    assert providers[0]["api_key"] == "env:FAKE_KEY"
    assert [route["name"] for route in routes] == ["chat"]
    assert [policy["name"] for policy in policies] == ["default"]
    status = config.json()["status"]
    assert set(status) >= {"path", "error", "error_at", "applied_at"}


def test_route_preview_calls_no_upstream(gw: GwServer, fake: FakeOpenAI) -> None:
    with gw.client() as client:
        answer = client.post(
            "/admin/v1/route-preview", json={"model": "chat", "messages": HI, "max_tokens": 9}
        )
        unknown = client.post("/admin/v1/route-preview", json={"model": "nope", "messages": HI})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["policy"] == "default"
    assert body["decision"]["chain"] == ["fake/gpt-a"]
    assert body["decision"]["candidates"][0]["rank"] == 0
    assert unknown.status_code == 404
    assert fake.count == 0


def test_traces_match_gw_explain(gw: GwServer) -> None:
    with gw.client() as client:
        chat = client.post(
            "/v1/chat/completions",
            json={"model": "chat", "messages": HI},
            headers={"x-request-id": "mine-1"},
        )
        request_id = chat.headers["x-gw-request-id"]
        explained = gw.wait_for_trace(request_id)
        one = client.get(f"/admin/v1/traces/{request_id}")
        listed = client.get("/admin/v1/traces", params={"client_request_id": "mine-1"})
        missing = client.get("/admin/v1/traces/req_nope")
    assert one.json() == explained
    assert [trace["request_id"] for trace in listed.json()] == [request_id]
    assert missing.status_code == 404


def test_openapi_lists_both_planes(gw: GwServer) -> None:
    with gw.client() as client:
        document = client.get("/openapi.json").json()
    assert "/v1/chat/completions" in document["paths"]
    assert "/admin/v1/routes" in document["paths"]


def test_app_imports_without_polyfactory() -> None:
    code = (
        "import sys; sys.modules['polyfactory'] = None\n"
        "import gw.server.app, gw.server.openapi_doc\n"
        "assert 'polyfactory' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_keys_mode_needs_the_admin_key(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(
        "auth: {mode: keys, admin_key: env:GW_TEST_ADMIN}\n"
        "providers: [{name: mock, kind: mock}]\n"
        "routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]\n"
    )
    env = {"GW_TEST_ADMIN": "gw-admin-test-0123456789"}
    with GwServer(tmp_path / "state", config, env=env) as server, server.client() as client:
        assert client.get("/admin/v1/config").status_code == 401
        assert client.put("/admin/v1/routes/x", json=fast_route("x")).status_code == 401
        auth = {"authorization": "Bearer gw-admin-test-0123456789"}
        assert client.get("/admin/v1/config", headers=auth).status_code == 200


def test_cli_route_preview(gw: GwServer, fake: FakeOpenAI) -> None:
    shown = gw.cli_json("route-preview", "--model", "chat")
    assert shown["decision"]["chain"] == ["fake/gpt-a"]
    table = gw.cli("route-preview", "--model", "chat", "--message", "hello").stdout
    assert "fake" in table
    assert fake.count == 0
    assert json.dumps(shown)
    assert httpx  # the module is used by the fixtures' clients


def test_route_preview_text_shows_the_decision_notes(gw: GwServer) -> None:
    shown = gw.cli("route-preview", "--model", "fake/not-in-the-catalog")
    assert "Note: no catalog entry for fake/not-in-the-catalog" in " ".join(shown.stdout.split())
