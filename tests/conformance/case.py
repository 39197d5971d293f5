"""A row of the table (``Case``) and a client format with its rows (``Client``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.checks import Concept
from gw.ir import ChatRequest

# (body, headers, stream from the path) -> the IR request, as the ingress decodes it.
Decoder = Callable[[bytes, Mapping[str, str], bool], ChatRequest]


@dataclass(frozen=True)
class Case:
    """A client field: the minimal request carrying it (``body``: keys set on the client's
    base body), and what it means (``concept``). ``stream``: the Gemini path's stream."""

    field: str
    body: Mapping[str, Any]
    concept: Concept
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    stream: bool = False


@dataclass(frozen=True)
class Client:
    """A client wire format: its decoder, the smallest valid body, and its rows."""

    format: str
    title: str
    base: Mapping[str, Any]
    decode: Decoder
    cases: tuple[Case, ...]

    def body(self, case: Case | None) -> dict[str, Any]:
        return {**self.base, **(case.body if case is not None else {})}
