"""A background Responses job as ``gw explain`` shows it: its states and times, and what
is left of its content (never the content itself)."""

from __future__ import annotations

from datetime import tzinfo

from rich.text import Text

from gw.cli.traces_view import local_time
from gw.record import response_id
from gw.store.response_jobs import Job
from gw.telemetry.explain import iso_utc

# What ``content`` says, for people.
_CONTENT = {
    "held": "held, encrypted, until fetched or expired",
    "fetched": "deleted when the result was fetched",
    "expired": "deleted when its retention ran out",
    "discarded": "deleted: nothing to hand out",
}


def job_json(job: Job) -> dict[str, object]:
    """The ``background_job`` object of ``gw explain --json``."""
    return {
        "response_id": response_id(job.request_id),
        "status": job.status,
        "created_at": iso_utc(job.created_at),
        "started_at": _iso(job.started_at),
        "finished_at": _iso(job.finished_at),
        "expires_at": _iso(job.expires_at) if job.content == "held" and job.ended else None,
        "content": job.content,
        "error": (
            None
            if job.error_code is None
            else {"code": job.error_code, "message": job.error_message}
        ),
    }


def job_text(job: Job, *, tz: tzinfo | None = None) -> Text:
    """``Background job resp_...: completed; queued 12:00:01, started ..., ended ...``."""
    times = [f"queued {local_time(job.created_at, tz)}"]
    if job.started_at is not None:
        times.append(f"started {local_time(job.started_at, tz)}")
    if job.finished_at is not None:
        times.append(f"ended {local_time(job.finished_at, tz)}")
    text = Text(f"Background job {response_id(job.request_id)}: ", style="bold")
    text.append(job.status, style="red" if job.status == "failed" else "")
    text.append(f"; {', '.join(times)}; content {_CONTENT[job.content]}")
    if job.error_code is not None:
        text.append(f"\n  {job.error_code}: {job.error_message}", style="red")
    return text


def _iso(timestamp: float | None) -> str | None:
    return None if timestamp is None else iso_utc(timestamp)
