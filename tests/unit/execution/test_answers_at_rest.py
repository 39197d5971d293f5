"""AnswersAtRest (gw/execution/answers_at_rest.py): an answer kept is written sealed and
read back whole (blocks, tool calls, thinking, the semantic probe), expiring on the same
wall-clock time; keys never written are never looked up; the table is bounded by bytes,
the soonest-expiring rows going first; a store that fails is a miss, not an error."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from gw.execution.answers_at_rest import AnswersAtRest
from gw.execution.response_cache import CachedAnswer
from gw.execution.semantic_cache import Probe, unit_vector
from gw.ir import ChatResponse, TextPart, ThinkingPart, ToolCall, Usage
from gw.routing.decision import TargetRef


class Rows:
    def __init__(self) -> None:
        self.rows: dict[str, tuple[float, bytes]] = {}
        self.reads = 0

    async def keys(self, *, now: float) -> list[tuple[str, float, int]]:
        return [(k, e, len(b)) for k, (e, b) in self.rows.items() if e > now]

    async def get(self, key: str, *, now: float) -> bytes | None:
        self.reads += 1
        row = self.rows.get(key)
        return row[1] if row and row[0] > now else None

    async def put_many(self, rows: Sequence[tuple[str, float, bytes]]) -> None:
        for key, expires_at, entry in rows:
            self.rows[key] = (expires_at, entry)

    async def delete(self, keys: Sequence[str]) -> None:
        for key in keys:
            self.rows.pop(key, None)

    async def expire(self, *, now: float) -> int:
        gone = [k for k, (e, _) in self.rows.items() if e <= now]
        await self.delete(gone)
        return len(gone)


class Sealer:
    def seal(self, plain: bytes) -> bytes:
        return b"sealed:" + plain[::-1]

    def open(self, sealed: bytes) -> bytes:
        assert sealed.startswith(b"sealed:")
        return sealed.removeprefix(b"sealed:")[::-1]


ANSWER = ChatResponse(
    id="r", model="m", text="hello",
    thinking=(ThinkingPart(text="hm", signature="sig"),),
    tool_calls=(ToolCall(id="c", name="f", arguments="{}"),),
    blocks=(ThinkingPart(text="hm", signature="sig"), TextPart(text="hello"),
            ToolCall(id="c", name="f", arguments="{}")),
    finish_reason="tool_calls", usage=Usage(input_tokens=3, output_tokens=4),
)  # fmt: skip
ENTRY = CachedAnswer(
    response=ANSWER, request_id="req_1", target=TargetRef(provider="p", model="m"),
    expires_at=5.0, size=100, max_tokens=None, cost_usd=0.1,
    probe=Probe(frame="f", vector=unit_vector([1.0, 2.0])),
)  # fmt: skip


def test_a_kept_answer_is_read_back_whole_by_a_later_process() -> None:
    async def go() -> None:
        rows = Rows()
        first = AnswersAtRest(rows, Sealer())
        await first.start(wall=1000.0)
        first.keep("k", ENTRY, expires=1060.0, max_bytes=10_000)
        await first.drain()
        assert b"hello" not in rows.rows["k"][1]
        later = AnswersAtRest(rows, Sealer())
        await later.start(wall=1010.0)
        assert later.holds("k", wall=1010.0)
        assert not later.holds("other", wall=1010.0)
        back = await later.fetch("k", wall=1010.0, mono=7.0)
        assert back is not None
        assert back.response == ANSWER
        assert back.probe == ENTRY.probe
        assert back.expires_at == 57.0  # 50 s left, on the monotonic clock
        assert not later.holds("k", wall=1060.0)

    asyncio.run(go())


def test_the_table_is_bounded_and_a_failing_store_is_a_miss() -> None:
    async def go() -> None:
        rows = Rows()
        at_rest = AnswersAtRest(rows, Sealer())
        await at_rest.start(wall=0.0)
        at_rest.keep("soon", ENTRY, expires=10.0, max_bytes=10_000)
        await at_rest.drain()
        size = len(rows.rows["soon"][1])
        at_rest.keep("late", ENTRY, expires=20.0, max_bytes=2 * size - 1)
        await at_rest.drain()
        assert list(rows.rows) == ["late"]

        async def broken(key: str, *, now: float) -> bytes | None:
            raise OSError("disk gone")

        rows.get = broken  # type: ignore[method-assign]
        assert await at_rest.fetch("late", wall=0.0, mono=0.0) is None
        assert not at_rest.holds("late", wall=0.0)
        assert rows.rows == {}  # the row no one could read is gone too

    asyncio.run(go())


def test_drain_waits_for_a_write_in_progress_and_what_came_meanwhile() -> None:
    async def go() -> None:
        rows = Rows()
        writing, go_on = asyncio.Event(), asyncio.Event()
        put_many = rows.put_many

        async def slow(batch: Sequence[tuple[str, float, bytes]]) -> None:
            writing.set()
            await go_on.wait()
            await put_many(batch)

        rows.put_many = slow  # type: ignore[method-assign]
        at_rest = AnswersAtRest(rows, Sealer())
        await at_rest.start(wall=0.0)
        at_rest.keep("one", ENTRY, expires=10.0, max_bytes=10_000)
        at_rest._flush_now.set()
        await writing.wait()
        at_rest.keep("two", ENTRY, expires=10.0, max_bytes=10_000)  # arrives mid-write
        draining = asyncio.create_task(at_rest.drain())
        go_on.set()
        await draining
        assert sorted(rows.rows) == ["one", "two"]

    asyncio.run(go())
