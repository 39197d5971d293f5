"""What gw holds of Responses, built at start: the links ``previous_response_id`` follows
(fed every trace) and the background jobs with their worker (gw/server/inference/background_*.py).

The worker always runs, even with ``responses.background.enabled: false``: it is one idle
task, it fails the jobs a killed gw left running, and it runs the ones queued before the
feature was turned off by a reload. The vault identity that seals job content is looked
for only when a job first needs it.
"""

from __future__ import annotations

from gw.execution.gateway import Gateway
from gw.server.inference.background_jobs import BackgroundJobs
from gw.server.inference.background_worker import BackgroundWorker
from gw.server.inference.previous_response import ResponseLinks
from gw.startup.plan import ServePlan, SnapshotHolder, SystemClock
from gw.store.port import StateStore
from gw.telemetry.hub import TelemetryHub
from gw.telemetry.response_links import RecentResponses
from gw.vault.content_seal import ContentSeal


def responses_state(
    plan: ServePlan,
    store: StateStore,
    gateway: Gateway,
    *,
    seal: ContentSeal,
    telemetry: TelemetryHub,
    snapshots: SnapshotHolder,
    clock: SystemClock,
) -> tuple[ResponseLinks, BackgroundJobs]:
    """The links of responses (recent ones from every trace, older ones from the store)
    and the jobs service: start its ``worker`` with the server, stop it before the store."""
    recent = RecentResponses()
    telemetry.add(recent)
    links = ResponseLinks(recent, store.request_path_traces())
    jobs = store.response_jobs()
    worker = BackgroundWorker(
        jobs, seal=seal, gateway=gateway, links=links, snapshot=snapshots.get, clock=clock
    )
    background = BackgroundJobs(
        jobs,
        seal,
        worker,
        clock,
        lambda: snapshots.get().config.state.trace_max_age.seconds,
    )
    return links, background
