"""The store contract: traces written, read back, followed and pruned, on every engine."""

from __future__ import annotations

import pytest
from store_targets import Target, run

from gw.record import TraceRecord
from gw.routing.decision import RouteDecision, TargetRef
from gw.routing.inputs import RoutingInputs
from gw.store.port import StateStore
from gw.store.trace_reads import AmbiguousRequestIdError
from gw.store.trace_rows import TRACE_ROW_OVERHEAD


def trace(request_id: str, time: float, **fields: object) -> TraceRecord:
    values: dict[str, object] = {
        "request_id": request_id,
        "time": time,
        "endpoint": "chat.completions",
        "requested_model": "chat",
        "stream": False,
        "status": 200,
        "revision": 1,
        "latency_ms": 1.0,
    }
    values.update(fields)
    return TraceRecord(**values)  # type: ignore[arg-type]  # test builder


def ids(traces: list[TraceRecord]) -> list[str]:
    return [t.request_id for t in traces]


def test_traces_are_listed_newest_first_and_found_by_id_or_prefix(target: Target) -> None:
    async def body(store: StateStore) -> None:
        await store.write_traces([trace(f"req_{n:04d}aaaa", 100.0 + n) for n in range(5)])
        await store.write_traces([trace("req_0001aaaa", 200.0, status=502)])  # replaced
        await store.write_traces([trace("other", 50.0, client_request_id="mine")])
        newest = ["req_0001aaaa", "req_0004aaaa", "req_0003aaaa"]
        assert ids(await store.list_traces(limit=3)) == newest
        assert ids(await store.list_traces(client_request_id="mine")) == ["other"]
        found = await store.get_trace("req_0001aaaa")
        assert found is not None
        assert found.status == 502
        assert await store.get_trace("req_000") is None  # seven characters: no prefix match
        prefixed = await store.get_trace("req_0002aa")
        assert prefixed is not None
        assert prefixed.request_id == "req_0002aaaa"
        assert await store.get_trace("nothing_like_it") is None
        assert await store.request_path_traces().get_trace("other") is not None

    run(target, body)


def test_a_prefix_matching_several_traces_is_refused(target: Target) -> None:
    async def body(store: StateStore) -> None:
        await store.write_traces([trace("abcdefgh1", 1.0), trace("abcdefgh2", 2.0)])
        with pytest.raises(AmbiguousRequestIdError):
            await store.get_trace("abcdefgh")

    run(target, body)


def test_a_period_is_read_newest_first_with_its_routing_inputs(target: Target) -> None:
    async def body(store: StateStore) -> None:
        inputs = RoutingInputs(stream=True, needs=frozenset({"tools"}), input_tokens=42)
        decision = RouteDecision(
            route="chat",
            direct=False,
            policy="default",
            strategy="priority",
            chain=(TargetRef(provider="p", model="m"),),
            candidates=(),
            estimated_input_tokens=42,
            max_output_tokens=None,
            inputs=inputs,
        )
        await store.write_traces([trace(f"p{n}", 100.0 + n, decision=decision) for n in range(6)])
        assert ids(await store.traces_between(101.0, 104.0, limit=10)) == ["p3", "p2", "p1"]
        newest = await store.traces_between(0.0, 1000.0, limit=2)
        assert ids(newest) == ["p5", "p4"]
        assert newest[0].decision is not None
        assert newest[0].decision.inputs == inputs
        assert await store.traces_between(200.0, 300.0, limit=10) == []

    run(target, body)


def test_the_follow_cursor_goes_in_write_order(target: Target) -> None:
    async def body(store: StateStore) -> None:
        assert await store.traces_written_after(None, limit=3) == ([], 0)
        await store.write_traces([trace(f"a{n}", 100.0 + n) for n in range(5)])
        last, cursor = await store.traces_written_after(None, limit=3)
        assert ids(last) == ["a2", "a3", "a4"]
        await store.write_traces([trace("late", 1.0), trace("b", 200.0)])
        page, cursor = await store.traces_written_after(cursor, limit=3)
        assert ids(page) == ["late", "b"]
        assert (await store.traces_written_after(cursor, limit=3))[0] == []

    run(target, body)


def test_pruning_deletes_the_oldest_and_reports_what_it_freed(target: Target) -> None:
    async def body(store: StateStore) -> None:
        await store.write_traces([trace(f"t{n}", 100.0 + n) for n in range(6)])
        rows, size = await store.trace_volume()
        assert rows == 6
        assert size > 6 * TRACE_ROW_OVERHEAD
        deleted, freed = await store.delete_traces_before(102.5, limit=2)
        assert deleted == 2
        assert freed > 2 * TRACE_ROW_OVERHEAD
        assert (await store.delete_traces_before(102.5, limit=10))[0] == 1
        assert (await store.delete_oldest_traces(limit=2))[0] == 2
        assert ids(await store.list_traces()) == ["t5"]
        assert (await store.trace_volume())[0] == 1
        assert await store.reclaim_space() >= 0

    run(target, body)
