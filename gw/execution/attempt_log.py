"""AttemptLog: the running record of every upstream call one request makes."""

from __future__ import annotations

import msgspec

from gw.errors import GatewayError
from gw.ports import Clock
from gw.record import AttemptOutcome, AttemptRecord
from gw.routing.decision import TargetRef


class PendingAttempt(msgspec.Struct, kw_only=True):
    number: int
    target: TargetRef
    account: str | None
    started_at: float
    started_mono: float
    backoff_ms: float
    ttft_ms: float | None = None
    provider_kind: str | None = None
    notes: list[str] = msgspec.field(default_factory=list)  # the call's, filled by its adapter
    limit_notes: list[str] = msgspec.field(default_factory=list)  # UpstreamCall.limit_notes
    hedge: bool = False
    upstream_response_id: str | None = None  # the upstream's id of its answer, once known


class AttemptLog:
    """Numbers attempts across the whole chain and closes each with its outcome."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.records: list[AttemptRecord] = []
        self._count = 0

    def start(
        self,
        target: TargetRef,
        *,
        account: str | None,
        backoff_ms: float,
        provider_kind: str | None = None,
        notes: list[str] | None = None,
        limit_notes: list[str] | None = None,
        hedge: bool = False,
    ) -> PendingAttempt:
        self._count += 1
        return PendingAttempt(
            number=self._count,
            target=target,
            account=account,
            started_at=self._clock.time(),
            started_mono=self._clock.monotonic(),
            backoff_ms=round(backoff_ms, 3),
            provider_kind=provider_kind,
            notes=[] if notes is None else notes,
            limit_notes=[] if limit_notes is None else limit_notes,
            hedge=hedge,
        )

    def mark_first_token(self, pending: PendingAttempt) -> None:
        pending.ttft_ms = self._elapsed_ms(pending)

    def finish(
        self,
        pending: PendingAttempt,
        outcome: AttemptOutcome,
        error: GatewayError | None = None,
    ) -> AttemptRecord:
        record = AttemptRecord(
            number=pending.number,
            provider=pending.target.provider,
            model=pending.target.model,
            account=pending.account,
            started_at=pending.started_at,
            latency_ms=self._elapsed_ms(pending),
            ttft_ms=pending.ttft_ms,
            outcome=outcome,
            upstream_status=error.upstream_status if error else None,
            error_code=error.code if error else None,
            error_message=error.message if error else None,
            blame=error.blame if error else None,
            retry_after_s=error.retry_after if error else None,
            backoff_ms=pending.backoff_ms,
            provider_kind=pending.provider_kind,
            translation_notes=tuple(pending.notes),
            limit_notes=tuple(pending.limit_notes),
            hedge=pending.hedge,
            upstream_response_id=pending.upstream_response_id,
        )
        self.records.append(record)
        return record

    def _elapsed_ms(self, pending: PendingAttempt) -> float:
        return round((self._clock.monotonic() - pending.started_mono) * 1000, 3)
