"""The targets under load, each in front of the same fake upstream: direct, gw (also with
its response cache on: ``bench.cache_load``) and the byte relay (``bench.relay``).

A ``Target`` is a started server that has answered its first chat request; how long
that took from process creation is one of the figures. (LiteLLM: ``bench.litellm_peer``.)
"""

from __future__ import annotations

import compileall
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from bench import relay
from bench.cache_load import CACHE_TARGETS, CacheRole, cache_policy_yaml
from bench.errors import BenchError
from bench.probe import first_answer
from bench.processes import ProcessSet, Spawned, clean_env, log_match
from bench.results import TargetName
from bench.upstream import CHAT_PATH, ROUTE, UPSTREAM_MODEL, chat_body, printed_origin

START_TIMEOUT_S = 60.0
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    name: TargetName
    chat_url: str
    spawned: Spawned
    start_to_first_answer_s: float
    notes: tuple[str, ...] = ()
    start_samples_s: tuple[float, ...] = ()  # when started more than once (bench/run.py)
    cache_role: CacheRole | None = None  # gw with its response cache on: which workload
    state_dir: Path | None = None  # gw's, where its admin token is


def direct_target(upstream: Spawned) -> Target:
    """The upstream itself: the baseline every gateway's added latency is measured from."""

    def locate() -> str | None:
        origin = printed_origin(upstream)
        return None if origin is None else origin + CHAT_PATH

    elapsed = first_answer(upstream, locate, chat_body(stream=False), START_TIMEOUT_S)
    url = locate()
    if url is None:  # pragma: no cover - first_answer returned, so the URL was printed
        raise BenchError("the upstream answered without printing its URL")
    return Target("direct", url, upstream, elapsed)


def gw_config(
    upstream_origin: str, upstream_transport: str | None = None, *, cache: bool = False
) -> str:
    """A gw config with route ``bench`` -> the fake upstream, everything else default
    (``server.upstream_transport`` too, unless ``upstream_transport`` names one; and the
    response cache, unless ``cache``: then one policy turns it on for every route)."""
    server = f"server:\n  upstream_transport: {upstream_transport}\n" if upstream_transport else ""
    policies = cache_policy_yaml() if cache else ""
    return (
        server
        + policies
        + (
            "providers:\n"
            "  - name: fake\n"
            "    kind: openai_compatible\n"
            f"    base_url: {upstream_origin}/v1\n"
            "routes:\n"
            f"  - name: {ROUTE}\n"
            f"    targets: [{{provider: fake, model: {UPSTREAM_MODEL}}}]\n"
        )
    )


def compile_gw() -> None:
    """Write the bytecode of gw's modules, as any install but an editable one does.

    .venv holds gw as an editable install, whose modules Python compiles on first import
    and caches, unless PYTHONDONTWRITEBYTECODE is set (it is on the CI machines): then
    every start compiled ~200 modules again (~0.2 s), which a user's gw never does.
    """
    package = REPO / "gw"
    if not compileall.compile_dir(package, quiet=1):
        raise BenchError(f"could not compile {package}: a module has a syntax error")


def start_gw(
    processes: ProcessSet,
    upstream_origin: str,
    state_dir: Path,
    upstream_transport: str | None = None,
    cache_role: CacheRole | None = None,
) -> Target:
    """``gw serve --port 0``; its URL comes from <state-dir>/server.json once it is ready.

    It imports the gw package beside this benchmark (PYTHONPATH), the one ``compile_gw``
    compiled: in a git worktree .venv's editable install may point at another checkout.
    With ``cache_role`` the response cache is on and the target is named for the role.
    """
    gw = Path(sys.executable).parent / "gw"
    if not gw.exists():
        raise BenchError(f"{gw} not found: run scripts/bench, which installs gw into .venv")
    compile_gw()
    state_dir.mkdir(parents=True, exist_ok=True)
    config = state_dir / "gw.yaml"
    config.write_text(gw_config(upstream_origin, upstream_transport, cache=cache_role is not None))
    server_file = state_dir / "server.json"
    argv = [str(gw), "serve", "--port", "0", "--state-dir", str(state_dir), "--config", str(config)]
    name: TargetName = "gw"
    for cache_target, role in CACHE_TARGETS.items():
        if role == cache_role:
            name = cache_target
    spawned = processes.spawn(name, argv, env=clean_env({"PYTHONPATH": str(REPO)}))

    def locate() -> str | None:
        try:
            url = json.loads(server_file.read_text())["url"]
        except (OSError, ValueError, KeyError):  # not written yet, or half written
            return None
        return f"{url}{CHAT_PATH}"

    elapsed = first_answer(spawned, locate, chat_body(stream=False), START_TIMEOUT_S)
    url = locate()
    if url is None:
        raise spawned.failure("answered, then lost its server.json")
    notes = (f"gw: server.upstream_transport {upstream_transport}",) if upstream_transport else ()
    return Target(name, url, spawned, elapsed, notes, cache_role=cache_role, state_dir=state_dir)


def start_relay(processes: ProcessSet, upstream_origin: str) -> Target:
    """``python -m bench.relay``, the floor of a Python gateway on gw's server stack."""
    argv = [sys.executable, "-m", "bench.relay", "--upstream", upstream_origin, "--port", "0"]
    spawned = processes.spawn("relay", argv, cwd=REPO, env=clean_env())

    def locate() -> str | None:
        match = log_match(spawned, relay.URL_LINE)
        return None if match is None else match.group(1) + CHAT_PATH

    elapsed = first_answer(spawned, locate, chat_body(stream=False), START_TIMEOUT_S)
    url = locate()
    if url is None:  # pragma: no cover - first_answer returned, so the URL was printed
        raise spawned.failure("answered without printing its URL")
    notes = (
        "relay: uvicorn + uvloop + httptools, a bare ASGI app passing bytes through "
        "(bench/relay.py); the floor for a Python gateway on gw's stack",
    )
    return Target("relay", url, spawned, elapsed, notes)
