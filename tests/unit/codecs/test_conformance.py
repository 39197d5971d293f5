"""The conversion conformance table (docs/conformance.md): every client format's fields
through gw's decoders and every upstream adapter, judged carried, noted, refused or
dropped (tests/conformance/). A new silent loss fails here, and so does a published table
that no longer says what the code does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conformance.known_losses import KNOWN_LOSSES
from conformance.render import COMMAND, render
from conformance.table import Table, build_table
from conformance.upstreams import Encoders, Upstream

DOC = Path(__file__).resolve().parents[3] / "docs" / "conformance.md"


@pytest.fixture(scope="module")
def table() -> Table:
    return build_table()


def _where(row_field: str, client: str, upstream: str) -> str:
    return f"{client} {row_field} -> {upstream}"


def test_every_cell_gets_a_verdict(table: Table) -> None:
    """An encoder error other than a refusal, or a check that passes without the field
    (it could not tell carried from dropped), is a fault of gw or of the case."""
    errors = [
        f"{_where(row.case.field, row.client.format, upstream.format)}: {cell.detail}"
        for row, upstream, cell in table.cells()
        if cell.outcome == "error"
    ]
    assert not errors, "\n".join(errors)


def test_no_silent_loss_but_the_known_ones(table: Table) -> None:
    dropped = [
        f"{_where(row.case.field, row.client.format, upstream.format)} (notes: {cell.detail})"
        for row, upstream, cell in table.cells()
        if cell.outcome == "dropped"
        and (row.client.format, row.case.field, upstream.format) not in KNOWN_LOSSES
    ]
    assert not dropped, (
        "these fields are lost without a note: carry them, note them (the adapter's lossy "
        "notes) or refuse them; or list them in tests/conformance/known_losses.py with the "
        "reason:\n" + "\n".join(dropped)
    )


def test_every_known_loss_is_still_lost(table: Table) -> None:
    """An entry whose cell is not dropped any more (fixed, or the row renamed) goes."""
    outcomes = {
        (row.client.format, row.case.field, upstream.format): cell.outcome
        for row, upstream, cell in table.cells()
    }
    stale = [
        f"{_where(field, client, upstream)}: {outcomes.get((client, field, upstream), 'no such row')}"
        for client, field, upstream in KNOWN_LOSSES
        if outcomes.get((client, field, upstream)) not in ("dropped", "pending")
    ]
    assert not stale, "remove from tests/conformance/known_losses.py:\n" + "\n".join(stale)


def test_the_published_table_says_what_the_code_does(table: Table) -> None:
    text = render(table)
    if os.environ.get("GW_UPDATE_CONFORMANCE") == "1":
        DOC.parent.mkdir(exist_ok=True)
        DOC.write_text(text, encoding="utf-8")
    published = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert published == text, f"docs/conformance.md is out of date; regenerate it: {COMMAND}"


def test_a_format_whose_encoder_is_missing_is_shown_pending() -> None:
    """A column for an encoder still being written is marked, not judged, and is judged
    as soon as its module is in gw (and the adapter directory serves its kind)."""
    future = Upstream("future", "Future API", "openai", None, "gw.codecs.future.upstream_request")
    encoders = Encoders()
    try:
        why = encoders.pending(future)
    finally:
        encoders.close()
    assert why == "gw.codecs.future.upstream_request is not in gw yet"
    text = render(Table(rows=(), pending={"openai_responses": why}))
    assert "| OpenAI Responses (pending) |" in text
    assert f"*(pending)* OpenAI Responses (pending): {why}." in text
