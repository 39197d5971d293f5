"""``gw traces`` and ``gw explain``: read the trace store, render tables or JSON."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from gw.cli.background_view import job_json, job_text
from gw.cli.console import fail, print_json, stdout
from gw.cli.explain_view import explain_renderables
from gw.cli.options import JsonOption, StateDirOption, resolve_home
from gw.cli.state_target import StateTarget, state_target
from gw.cli.traces_follow import emit_json, emit_line, follow, wait_for_store
from gw.cli.traces_view import traces_json, traces_table
from gw.record import TraceRecord, request_id_of
from gw.store.response_jobs import Job
from gw.store.trace_reads import MIN_PREFIX, AmbiguousRequestIdError
from gw.telemetry.explain import explain_json


async def _read_trace(
    target: StateTarget, request_id: str
) -> tuple[TraceRecord | None, Job | None]:
    """The trace, and the background Responses job of that request if it was one (a
    queued job has no trace yet)."""
    if not target.exists():
        return None, None
    async with await target.open() as store:
        trace = await store.get_trace(request_id)
        exact = trace.request_id if trace is not None else request_id_of(request_id)
        return trace, await store.response_jobs().get(exact)


def traces_command(
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="How many, newest first.")
    ] = 20,
    client_request_id: Annotated[
        str | None,
        typer.Option("--client-request-id", help="Only the request a client tagged x-request-id."),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", "-f", help="Then print new requests as they are written (Ctrl-C stops)."
        ),
    ] = False,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """List recent requests, newest first; with --follow, oldest first and then new ones."""
    target = state_target(resolve_home(state_dir))
    if follow:
        follow_command(target, limit, client_request_id, as_json=as_json)
        return
    traces: list[TraceRecord] = []
    if target.exists():
        traces = target.run(
            lambda store: store.list_traces(limit=limit, client_request_id=client_request_id)
        )
    if as_json:
        print_json(traces_json(traces))
        return
    if not traces:
        stdout.print(f"no requests recorded yet in {target.label}", highlight=False)
        return
    stdout.print(traces_table(traces))


def follow_command(
    target: StateTarget, limit: int, client_request_id: str | None, *, as_json: bool
) -> None:
    """``gw traces --follow``: JSON lines with ``--json``; exits 0 on Ctrl-C."""
    emit = emit_json if as_json else emit_line
    try:
        wait_for_store(target)
        asyncio.run(follow(target, emit, last=limit, client_request_id=client_request_id))
    except KeyboardInterrupt:
        return
    except target.errors() as error:
        fail(f"cannot read {target.label}: {error}")


def explain_command(
    request_id: Annotated[
        str,
        typer.Argument(
            help="A request id (x-gw-request-id; msg_... from /v1/messages, resp_... from"
            " /v1/responses), or a prefix."
        ),
    ],
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show why a request went where it went, and what happened on the way."""
    target = state_target(resolve_home(state_dir))
    try:
        trace, job = asyncio.run(_read_trace(target, request_id))
    except AmbiguousRequestIdError as error:  # a StoreError: before the general case
        fail(str(error))
    except target.errors() as error:
        fail(f"cannot read {target.label}: {error}")
    if trace is None and job is not None:  # queued or running: no trace yet
        if as_json:
            print_json({"request_id": job.request_id, "background_job": job_json(job)})
        else:
            stdout.print(job_text(job))
        return
    if trace is None:
        short = (
            ""
            if len(request_id) >= MIN_PREFIX
            else f" (a prefix needs {MIN_PREFIX} characters, and ids begin with the time: "
            "copy most of the id)"
        )
        fail(f"no request {request_id!r}{short} in {target.label}; `gw traces` lists recent ones")
    if as_json:
        shown = explain_json(trace)
        if job is not None:
            shown["background_job"] = job_json(job)
        print_json(shown)
        return
    for renderable in explain_renderables(trace):
        stdout.print(renderable)
    if job is not None:
        stdout.print(job_text(job))
