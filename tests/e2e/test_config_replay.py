"""``gw replay`` through a live gw: record traffic of two tenants, replay it under a
candidate config that removes a provider, then apply the candidate and check the live
gateway does what the replay said (targets, refusals, cost). The admin API's preview
(``POST /admin/v1/config/replay``) answers the same report.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import FakeOpenAI

MODELS = """
models:
  - {{provider: primary, model: gpt-a, input_per_mtok: 1.0, output_per_mtok: 2.0,
     capabilities: [tools]}}
  - {{provider: backup, model: gpt-b, input_per_mtok: 3.0, output_per_mtok: 6.0}}
"""
RECORDED = (
    """
providers:
  - {{name: primary, kind: openai_compatible, base_url: "{primary}"}}
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
"""
    + MODELS
    + """
routes:
  - name: chat
    targets: [{{provider: primary, model: gpt-a, priority: 1}}, {{provider: backup, model: gpt-b, priority: 2}}]
  - name: agent
    targets: [{{provider: primary, model: gpt-a, priority: 1}}, {{provider: backup, model: gpt-b, priority: 2}}]
  - name: steady
    targets: [{{provider: backup, model: gpt-b}}]
tenants: [{{name: team-a}}, {{name: team-b}}]
"""
)
# The candidate: provider primary gone, with its catalog entry and its targets.
CANDIDATE = """
providers:
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
models:
  - {{provider: backup, model: gpt-b, input_per_mtok: 3.0, output_per_mtok: 6.0}}
routes:
  - name: chat
    targets: [{{provider: backup, model: gpt-b}}]
  - name: agent
    targets: [{{provider: backup, model: gpt-b}}]
  - name: steady
    targets: [{{provider: backup, model: gpt-b}}]
tenants: [{{name: team-a}}, {{name: team-b}}]
"""
TOOL = {
    "type": "function",
    "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
}


class Traffic:
    """The recorded hour: each request as (tenant, route, stream, tools)."""

    REQUESTS = (
        ("team-a", "chat", False, False),
        ("team-a", "chat", False, False),
        ("team-a", "chat", True, False),
        ("team-b", "chat", False, False),
        ("team-b", "chat", True, False),
        ("team-a", "agent", False, True),
        ("team-b", "steady", False, False),
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gw-replay")


@pytest.fixture(scope="module")
def gw(home: Path, primary: FakeOpenAI, backup: FakeOpenAI) -> Iterator[GwServer]:
    (home / "state").mkdir()
    config = home / "state" / "gw.yaml"  # where the CLI finds it (gw keys create reads it)
    config.write_text(RECORDED.format(primary=primary.base_url, backup=backup.base_url))
    with GwServer(home / "state", config) as server:
        yield server


@pytest.fixture(scope="module")
def keys(gw: GwServer) -> dict[str, str]:
    return {t: gw.cli_json("keys", "create", "--tenant", t)["key"] for t in ("team-a", "team-b")}


def send(gw: GwServer, key: str, route: str, *, stream: bool, tools: bool) -> tuple[str, str]:
    """One request as the OpenAI SDK sends it: (request id, x-gw-route or the error code)."""
    with openai.OpenAI(base_url=gw.base_url, api_key=key, max_retries=0) as sdk:
        extra: dict[str, Any] = {"tools": [TOOL]} if tools else {}
        messages: Any = [{"role": "user", "content": f"a question for {route} in six words"}]
        try:
            raw = sdk.chat.completions.with_raw_response.create(
                model=route, messages=messages, stream=stream, **extra
            )
        except openai.APIStatusError as error:
            body: Any = error.body
            return error.response.headers["x-gw-request-id"], f"refused: {body['code']}"
        if stream:
            for _chunk in raw.parse():
                pass
        return raw.headers["x-gw-request-id"], raw.headers["x-gw-route"]


def record(gw: GwServer, keys: dict[str, str]) -> list[tuple[str, str]]:
    sent = [
        send(gw, keys[tenant], route, stream=stream, tools=tools)
        for tenant, route, stream, tools in Traffic.REQUESTS
    ]
    for request_id, _ in sent:
        gw.wait_for_trace(request_id)
    return sent


def cost_of(gw: GwServer, request_id: str) -> float:
    trace = gw.wait_for_trace(request_id)
    return float(trace["cost_usd"] or 0.0)


def test_replay_shows_moved_traffic_and_cost_and_the_live_gateway_agrees(
    gw: GwServer, keys: dict[str, str], home: Path, backup: FakeOpenAI
) -> None:
    recorded = record(gw, keys)
    assert [route for _, route in recorded] == ["primary/gpt-a"] * 6 + ["backup/gpt-b"]
    candidate = home / "candidate.yaml"
    candidate.write_text(CANDIDATE.format(backup=backup.base_url))

    report = gw.cli_json("replay", "--config", str(candidate), "--since", "1h")

    counts = report["requests"]
    assert counts["replayed"] == 7
    assert (counts["changed"], counts["unchanged"], counts["without_inputs"]) == (6, 1, 0)
    assert report["moved"] == [
        {"route": "chat", "from": "primary/gpt-a", "to": "backup/gpt-b", "requests": 5}
    ]
    [refused] = report["refused"]
    assert (refused["route"], refused["code"]) == ("agent", "native_feature_unsupported")
    assert refused["before"] == {"primary/gpt-a": 1}
    assert "backup/gpt-b" in refused["reason"]
    assert report["assumptions"]
    changes = {c["request_id"]: c for c in report["changes"]}
    recorded_cost = {rid: cost_of(gw, rid) for rid, _ in recorded}
    cost = report["cost"]
    assert cost["before_usd"] == pytest.approx(sum(recorded_cost.values()))
    by_route = {row["route"]: row for row in cost["by_route"]}
    assert by_route["agent"]["after_usd"] == 0.0  # refused: nothing spent
    assert by_route["chat"]["after_usd"] > by_route["chat"]["before_usd"]  # 3x the price
    by_tenant = {row["tenant"]: row for row in cost["by_tenant"]}
    assert set(by_tenant) == {"team-a", "team-b"}
    assert sum(row["requests"] for row in by_tenant.values()) == 7
    assert by_tenant["team-a"]["delta_usd"] == pytest.approx(
        by_tenant["team-a"]["after_usd"] - by_tenant["team-a"]["before_usd"]
    )

    # The table form says the same, and a bad candidate fails naming file, field and reason.
    table = gw.cli("replay", "--config", str(candidate), "--since", "1h").stdout
    assert "primary/gpt-a" in table
    assert "native_feature_unsupported" in table
    assert "healthy" in table  # the health assumption is stated
    broken = home / "broken.yaml"
    broken.write_text(CANDIDATE.format(backup=backup.base_url).replace("gpt-b}]", "gpt-b, x: 1}]"))
    failed = gw.cli("replay", "--config", str(broken), check=False)
    assert failed.returncode != 0
    assert str(broken) in failed.stderr
    assert "routes[0].targets[0]" in failed.stderr

    # Apply the candidate: the live gateway now routes as the replay said, at its cost.
    revision = live_revision(gw)
    (home / "state" / "gw.yaml").write_text(candidate.read_text())
    wait_until(lambda: live_revision(gw) > revision, lambda: f"the candidate to apply:\n{gw.log()}")
    for (tenant, route, stream, tools), (old_id, _) in zip(Traffic.REQUESTS, recorded, strict=True):
        new_id, live = send(gw, keys[tenant], route, stream=stream, tools=tools)
        change = changes.get(old_id)
        if change is None:  # unchanged by the candidate
            assert live == "backup/gpt-b"
            continue
        after = change["after"]
        assert live == (after["target"] or f"refused: {after['code']}")
        assert cost_of(gw, new_id) == pytest.approx(change["after_usd"])


def test_the_config_preview_endpoint_answers_the_same_report(
    gw: GwServer, home: Path, backup: FakeOpenAI
) -> None:
    candidate = CANDIDATE.format(backup=backup.base_url)
    (home / "preview.yaml").write_text(candidate)
    cli = gw.cli_json("replay", "--config", str(home / "preview.yaml"), "--since", "1h")
    with httpx.Client(base_url=gw.url, timeout=60.0) as http:
        auth = {"authorization": f"Bearer {gw.admin_token}"}
        answer = http.post(
            "/admin/v1/config/replay?since=1h", content=candidate.encode(), headers=auth
        )
        assert answer.status_code == 200, answer.text
        preview = answer.json()
        for part in ("requests", "moved", "refused", "cost"):
            assert preview[part] == cli[part]
        bad = http.post(
            "/admin/v1/config/replay",
            content=candidate.replace("backup, model: gpt-b}]", "ghost, model: gpt-b}]").encode(),
            headers=auth,
        )
        assert bad.status_code == 400
        assert bad.json()["error"]["param"] == "routes[0].targets[0].provider"
        unauthorized = http.post("/admin/v1/config/replay", content=candidate.encode())
        assert unauthorized.status_code == 401


def live_revision(gw: GwServer) -> int:
    with gw.client() as http:
        return int(http.get("/readyz").json()["revision"])
