"""Judge every (client field, upstream format) cell: carried, noted, refused or dropped.

For a cell: the client's minimal body with the field is decoded by gw's own decoder,
routed in thought (provider-side tools need a target of their format; a
``previous_response_id`` is pinned to the Responses account that made the response),
and encoded by gw's own adapter for the upstream (``upstreams.Encoders``). Then, in order:

- ``refused``: decoding or encoding raised ``NativeFeatureUnsupportedError``, or routing
  would not send the request to this upstream;
- ``carried``: the field's check finds it in the upstream body;
- ``noted``: a lossy-translation note of the attempt names it;
- ``dropped``: none of these.

A check that already passes on the client's base body (without the field) cannot tell
anything: such a cell is an ``error``, as is any other exception.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import msgspec

from conformance.case import Case, Client
from conformance.cases_anthropic import CLIENT as ANTHROPIC
from conformance.cases_gemini import CLIENT as GEMINI
from conformance.cases_openai_chat import CLIENT as OPENAI_CHAT
from conformance.cases_responses import CLIENT as RESPONSES
from conformance.upstreams import UPSTREAMS, Encoded, Encoders, Upstream
from gw.errors import NativeFeatureUnsupportedError
from gw.ir import ChatRequest
from gw.routing.needs import required_native_format
from gw.server.inference.previous_response import FORMAT as PREVIOUS_FORMAT
from gw.server.inference.previous_response import NATIVE_KIND, PARAM

CLIENTS: tuple[Client, ...] = (OPENAI_CHAT, ANTHROPIC, RESPONSES, GEMINI)

Outcome = Literal["carried", "noted", "refused", "dropped", "pending", "error"]
VERDICTS: tuple[Outcome, ...] = ("carried", "noted", "refused", "dropped")


@dataclass(frozen=True)
class Cell:
    outcome: Outcome
    detail: str = ""  # the note, the refusal or the error that decided it


@dataclass(frozen=True)
class Row:
    client: Client
    case: Case
    cells: dict[str, Cell]  # upstream format -> cell


@dataclass(frozen=True)
class Table:
    rows: tuple[Row, ...]
    pending: dict[str, str]  # upstream format -> why its column is not judged yet

    def cells(self) -> Iterator[tuple[Row, Upstream, Cell]]:
        for row in self.rows:
            for upstream in UPSTREAMS:
                yield row, upstream, row.cells[upstream.format]


def build_table() -> Table:
    encoders = Encoders()
    try:
        pending = {
            upstream.format: why
            for upstream in UPSTREAMS
            if (why := encoders.pending(upstream)) is not None
        }
        rows = tuple(
            _Judge(client, encoders, pending).row(case)
            for client in CLIENTS
            for case in client.cases
        )
    finally:
        encoders.close()
    return Table(rows=rows, pending=pending)


class _Judge:
    """Judges one client format's rows against every upstream."""

    def __init__(self, client: Client, encoders: Encoders, pending: dict[str, str]) -> None:
        self._client = client
        self._encoders = encoders
        self._pending = pending
        base = _decode(client, None)
        assert isinstance(base, ChatRequest), f"{client.format}: the base body fails: {base}"
        self._base = {
            upstream.format: encoders.encode(base, upstream)
            for upstream in UPSTREAMS
            if upstream.format not in pending
        }

    def row(self, case: Case) -> Row:
        request = _decode(self._client, case)
        return Row(
            client=self._client,
            case=case,
            cells={upstream.format: self._cell(case, request, upstream) for upstream in UPSTREAMS},
        )

    def _cell(self, case: Case, request: ChatRequest | Exception, upstream: Upstream) -> Cell:
        if upstream.format in self._pending:
            return Cell("pending", self._pending[upstream.format])
        if isinstance(request, Exception):
            return _failed("decoding", request)
        refusal = _routing_refusal(request, upstream)
        if refusal is not None:
            return Cell("refused", refusal)
        return self._verdict(case, self._encoders.encode(request, upstream), upstream)

    def _verdict(self, case: Case, encoded: Encoded, upstream: Upstream) -> Cell:
        if encoded.error is not None:
            return _failed("encoding", encoded.error)
        check = case.concept.checks.get(upstream.format)
        if check is not None:
            base = self._base[upstream.format].sent
            if base is not None and check(base):
                return Cell("error", "the check passes on the base body too: it proves nothing")
            if encoded.sent is not None and check(encoded.sent):
                return Cell("carried")
        note = _naming_note(encoded, case.concept.terms)
        if note is not None:
            return Cell("noted", note)
        return Cell("dropped", "; ".join(encoded.notes) or "no note")


def _decode(client: Client, case: Case | None) -> ChatRequest | Exception:
    body = msgspec.json.encode(client.body(case))
    headers = case.headers if case is not None else {}
    try:
        return client.decode(body, headers, case.stream if case is not None else False)
    except Exception as error:  # noqa: BLE001 - a refusal is a verdict, the rest an error cell
        return error


def _failed(step: str, error: Exception) -> Cell:
    if isinstance(error, NativeFeatureUnsupportedError):
        return Cell("refused", f"{step}: {error}")
    return Cell("error", f"{step} raised {type(error).__name__}: {error}")


def _routing_refusal(request: ChatRequest, upstream: Upstream) -> str | None:
    """Why routing would never send ``request`` to ``upstream``, or None."""
    needed = required_native_format(request)
    if needed is not None and needed != upstream.native:
        return f"routing: its provider-side tools need a {needed} target"
    if PARAM in request.extensions.get(PREVIOUS_FORMAT, {}) and upstream.kind != NATIVE_KIND:
        return f"routing: {PARAM} is served only by the {NATIVE_KIND} account that made it"
    return None


def _naming_note(encoded: Encoded, terms: tuple[str, ...]) -> str | None:
    for note in encoded.notes:
        if any(term.lower() in note.lower() for term in terms):
            return note
    return None
