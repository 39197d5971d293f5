"""Background Responses through a real gw, as the openai SDK uses them: queued, polled,
completed and handed out once; cancelled; deleted; expired; limited per tenant and seen
only by their own key; surviving a kill -9 (a queued job runs after the restart, a cut
one says it failed); and their content never on disk in the clear, and gone from it once
fetched or expired. previous_response_id is refused where gw cannot forward it."""

from __future__ import annotations

import json
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes import openai_upstream
from fakes.openai_upstream import FakeOpenAI

SLOW = openai_upstream.Behavior(delay_before_headers=60.0)  # until cancelled or killed
CONFIG = """
providers:
  - {{name: oai, kind: openai_compatible, base_url: "{openai}"}}
routes:
  - {{name: to-openai, targets: [{{provider: oai, model: gpt-a}}]}}
policies:
  - name: quick
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 1}}
{extra}
"""
BACKGROUND = """
responses:
  background: {{enabled: true, concurrency: 1, max_queued_per_tenant: {limit}, retention: {retention}}}
"""
WAITING = ("queued", "in_progress")


def write_config(home: Path, fake: FakeOpenAI, extra: str) -> Path:
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(openai=fake.base_url, extra=extra))
    return config


def background(limit: int = 8, retention: str = "1h") -> str:
    return BACKGROUND.format(limit=limit, retention=retention)


def sdk(server: GwServer, key: str = "x") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0)


def job_state(server: GwServer, response_id: str) -> dict[str, Any] | None:
    """``gw explain``'s view of a job (it never hands the result out, as GET would)."""
    done = server.cli("explain", response_id, "--json", check=False)
    return json.loads(done.stdout).get("background_job") if done.returncode == 0 else None


def wait_for_job(server: GwServer, response_id: str, **expected: str) -> dict[str, Any]:
    def matches() -> dict[str, Any] | None:
        state = job_state(server, response_id)
        if state and all(state[k] == v for k, v in expected.items()):
            return state
        return None

    return wait_until(matches, f"job {response_id} {expected}")


def poll(client: openai.OpenAI, response_id: str) -> Any:
    """What a client does: retrieve until the response is no longer queued or running."""

    def ended() -> Any:
        answer = client.responses.retrieve(response_id)
        return answer if answer.status not in WAITING else None

    return wait_until(ended, f"{response_id} to end")


def disk(state_dir: Path) -> bytes:
    """Every byte gw keeps in its state directory (gw.db, -wal, -shm, keys, logs)."""
    return b"".join(path.read_bytes() for path in state_dir.iterdir() if path.is_file())


def sealed_request(state_dir: Path, request_id: str) -> bytes:
    """The stored (encrypted) request body, read as any local user of the file could."""
    conn = sqlite3.connect(f"file:{state_dir / 'gw.db'}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT request FROM response_jobs WHERE request_id = ?", (request_id,)
        ).fetchone()
    finally:
        conn.close()
    assert row is not None
    assert row[0] is not None
    return bytes(row[0])


def request_id(response_id: str) -> str:
    return "req_" + response_id.removeprefix("resp_")


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as upstream:
        yield upstream


@pytest.fixture(autouse=True)
def _clear(fake: FakeOpenAI) -> None:
    fake.clear()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("background")
    with GwServer(home / "state", write_config(home, fake, background(retention="3s"))) as server:
        yield server


def test_a_background_response_is_queued_polled_and_handed_out_once(
    gw: GwServer, fake: FakeOpenAI
) -> None:
    client = sdk(gw)
    fake.enqueue(openai_upstream.Behavior(delay_before_headers=0.5))
    queued = client.responses.create(
        model="to-openai", input="MARKER-ONCE what is up?", background=True, metadata={"k": "v"}
    )
    assert (queued.status, queued.background, queued.output) == ("queued", True, [])
    assert queued.metadata == {"k": "v"}
    items = client.responses.input_items.list(queued.id)
    assert [item.type for item in items.data] == ["message"]
    assert items.data[0].content[0].text == "MARKER-ONCE what is up?"  # type: ignore[union-attr]
    sealed = sealed_request(gw.state_dir, request_id(queued.id))
    assert b"MARKER-ONCE" not in sealed  # encrypted at rest
    done = poll(client, queued.id)
    assert (done.status, done.output_text) == ("completed", openai_upstream.DEFAULT_TEXT)
    assert done.id == queued.id
    again = client.responses.retrieve(queued.id)
    assert (again.status, again.output) == ("completed", [])  # handed out once
    assert client.responses.input_items.list(queued.id).data == []
    on_disk = disk(gw.state_dir)
    assert b"MARKER-ONCE" not in on_disk
    assert sealed[-64:] not in on_disk  # the ciphertext is gone too
    trace = gw.wait_for_trace(queued.id)
    assert (trace["endpoint"], trace["background"], trace["status"]) == ("responses", True, 200)
    assert trace["background_job"]["content"] == "fetched"
    assert "background job" in gw.cli("explain", queued.id).stdout


def test_a_running_background_response_is_cancelled(gw: GwServer, fake: FakeOpenAI) -> None:
    client = sdk(gw)
    fake.enqueue(SLOW)
    queued = client.responses.create(model="to-openai", input="MARKER-CANCEL", background=True)
    wait_until(lambda: fake.count == 1, "the upstream call")
    assert client.responses.retrieve(queued.id).status == "in_progress"
    cancelled = client.responses.cancel(queued.id)
    assert (cancelled.id, cancelled.status) == (queued.id, "cancelled")
    assert client.responses.cancel(queued.id).status == "cancelled"  # again: the same
    assert client.responses.retrieve(queued.id).status == "cancelled"
    wait_for_job(gw, queued.id, status="cancelled", content="discarded")
    assert b"MARKER-CANCEL" not in disk(gw.state_dir)
    # The worker is free again: the next job runs (concurrency 1).
    assert (
        poll(
            client, client.responses.create(model="to-openai", input="hi", background=True).id
        ).status
        == "completed"
    )


def test_an_ended_response_cannot_be_cancelled_and_a_deleted_one_is_gone(gw: GwServer) -> None:
    client = sdk(gw)
    queued = client.responses.create(model="to-openai", input="hi", background=True)
    wait_for_job(gw, queued.id, status="completed")
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.cancel(queued.id)
    assert refused.value.code == "invalid_request"
    client.responses.delete(queued.id)
    with pytest.raises(openai.NotFoundError) as gone:
        client.responses.retrieve(queued.id)
    assert gone.value.code == "response_not_found"


def test_an_unfetched_answer_expires_and_leaves_nothing_on_disk(gw: GwServer) -> None:
    client = sdk(gw)
    queued = client.responses.create(model="to-openai", input="MARKER-EXPIRE", background=True)
    sealed = sealed_request(gw.state_dir, request_id(queued.id))
    wait_for_job(gw, queued.id, status="completed", content="held")
    wait_for_job(gw, queued.id, content="expired")  # retention: 3s
    late = client.responses.retrieve(queued.id)
    assert (late.status, late.output) == ("completed", [])
    on_disk = disk(gw.state_dir)
    assert b"MARKER-EXPIRE" not in on_disk
    assert sealed[-64:] not in on_disk


def test_background_with_stream_and_unknown_ids_are_refused(gw: GwServer) -> None:
    client = sdk(gw)
    with pytest.raises(openai.BadRequestError) as streamed:
        client.responses.create(model="to-openai", input="hi", background=True, stream=True)
    assert (streamed.value.code, streamed.value.param) == ("invalid_request", "stream")
    with pytest.raises(openai.NotFoundError) as unknown:
        client.responses.create(model="no-such-route", input="hi", background=True)
    assert unknown.value.code == "model_not_found"
    for call in (client.responses.retrieve, client.responses.cancel, client.responses.delete):
        with pytest.raises(openai.NotFoundError) as missing:
            call("resp_01nothinghere")
        assert missing.value.code == "response_not_found"
    plain = client.responses.create(model="to-openai", input="hi")  # not background: not kept
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(plain.id)


def test_previous_response_id_is_refused_where_gw_cannot_forward_it(gw: GwServer) -> None:
    client = sdk(gw)
    first = client.responses.create(model="to-openai", input="hi")
    with pytest.raises(openai.BadRequestError) as chat_upstream:
        client.responses.create(model="to-openai", input="and?", previous_response_id=first.id)
    error = chat_upstream.value
    assert (error.code, error.param) == ("invalid_request", "previous_response_id")
    assert "send the whole conversation as input" in error.message
    gone = "resp_" + "0" * 12 + "1" * 16  # gw's shape, never answered
    with pytest.raises(openai.NotFoundError) as unknown:
        client.responses.create(model="to-openai", input="and?", previous_response_id=gone)
    assert (unknown.value.code, unknown.value.param) == (
        "response_not_found",
        "previous_response_id",
    )
    # Any other text is not an id gw gives: refused, and never quoted (it may be a prompt's).
    with pytest.raises(openai.BadRequestError) as other:
        client.responses.create(
            model="to-openai", input="and?", previous_response_id="resp_ my secret plan " * 999
        )
    assert other.value.param == "previous_response_id"
    assert "secret" not in other.value.message
    with pytest.raises(openai.NotFoundError) as path:
        client.responses.retrieve("resp_ my secret plan")
    assert "secret" not in path.value.message


def test_background_responses_are_off_unless_configured(tmp_path: Path, fake: FakeOpenAI) -> None:
    config = write_config(tmp_path, fake, "")
    with (
        GwServer(tmp_path / "state", config) as server,
        pytest.raises(openai.BadRequestError) as off,
    ):
        sdk(server).responses.create(model="to-openai", input="hi", background=True)
    assert off.value.param == "background"
    assert "responses.background.enabled" in off.value.message
    assert not (tmp_path / "state" / "vault.key").exists()  # no key made for nothing


def test_each_tenant_has_its_own_queue_limit_and_sees_only_its_own_jobs(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    tenants = "tenants: [{name: a}, {name: b}]\n"
    config = write_config(tmp_path, fake, background(limit=2) + tenants)
    server = GwServer(tmp_path / "state", config)
    server.state_dir.mkdir(parents=True)
    key_a, key_b = (
        server.cli_json("keys", "create", "--tenant", t, "--config", str(config))["key"]
        for t in ("a", "b")
    )
    for _ in range(3):
        fake.enqueue(SLOW)
    with server:
        a, b = sdk(server, key_a), sdk(server, key_b)
        first = a.responses.create(model="to-openai", input="one", background=True)
        second = a.responses.create(model="to-openai", input="two", background=True)
        with pytest.raises(openai.RateLimitError) as full:
            a.responses.create(model="to-openai", input="three", background=True)
        assert full.value.code == "rate_limited"
        assert "max_queued_per_tenant" in full.value.message
        other = b.responses.create(model="to-openai", input="b's", background=True)
        assert other.status == "queued"
        with pytest.raises(openai.NotFoundError):
            b.responses.retrieve(first.id)
        with pytest.raises(openai.NotFoundError):
            b.responses.cancel(first.id)
        a.responses.cancel(first.id)  # a place frees
        assert (
            a.responses.create(model="to-openai", input="four", background=True).status == "queued"
        )
        for job, client in ((second, a), (other, b)):
            client.responses.cancel(job.id)


def test_after_a_kill_the_queued_job_runs_and_the_cut_one_says_it_failed(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    config = write_config(tmp_path, fake, background())
    fake.enqueue(SLOW)
    with GwServer(tmp_path / "state", config) as first_life:
        client = sdk(first_life)
        cut = client.responses.create(model="to-openai", input="MARKER-CUT", background=True)
        waiting = client.responses.create(model="to-openai", input="MARKER-WAIT", background=True)
        wait_until(lambda: fake.count == 1, "the first job's upstream call")
        assert client.responses.retrieve(waiting.id).status == "queued"  # concurrency 1
        assert first_life.process is not None
        first_life.process.send_signal(signal.SIGKILL)
        assert first_life.process.wait(timeout=10) == -signal.SIGKILL
    with GwServer(tmp_path / "state", config) as second_life:
        client = sdk(second_life)
        done = poll(client, waiting.id)
        assert (done.status, done.output_text) == ("completed", openai_upstream.DEFAULT_TEXT)
        failed = client.responses.retrieve(cut.id)
        assert failed.status == "failed"
        assert failed.error is not None
        assert failed.error.code == "server_error"
        assert "killed" in failed.error.message
        assert fake.count == 2  # the cut job is not run again
        on_disk = disk(second_life.state_dir)
        assert b"MARKER-CUT" not in on_disk
        assert b"MARKER-WAIT" not in on_disk


def test_a_job_still_running_when_gw_is_stopped_fails_saying_so(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    config = write_config(tmp_path, fake, background() + "server: {drain_timeout: 1s}\n")
    fake.enqueue(SLOW)
    with GwServer(tmp_path / "state", config) as first_life:
        running = sdk(first_life).responses.create(model="to-openai", input="hi", background=True)
        wait_until(lambda: fake.count == 1, "the job's upstream call")
        assert first_life.stop() == 0  # SIGTERM: the job gets drain_timeout, then fails
    with GwServer(tmp_path / "state", config) as second_life:
        stopped = sdk(second_life).responses.retrieve(running.id)
    assert stopped.status == "failed"
    assert stopped.error is not None
    assert "shut down" in stopped.error.message
