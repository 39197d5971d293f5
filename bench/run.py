"""``scripts/bench``: what gw adds on top of its upstream, in one run on this machine.

    scripts/bench                      direct, gw and gw with its response cache, 5 s per step
    scripts/bench --peer litellm       ... and the LiteLLM proxy (own virtualenv)
    scripts/bench --peer relay         ... and a bare byte relay (bench/relay.py): the floor
    scripts/bench --quick              a short smoke run
    scripts/bench --only direct,gw --duration 10
    scripts/bench --only direct,gw,gw-cache-miss,gw-cache-hit   the response cache's cost
    scripts/bench --only gw --upstream-transport httpx   gw with another upstream client
    scripts/bench --reload-stall [ROUTES]    only a hot reload's cost (bench/reload_stall.py)
    scripts/bench --usage-reports [ROWS]     only the reports' cost (bench/usage_reports.py)
    scripts/bench --fleet [SECONDS]          only PostgreSQL + Redis, 3 gateways (bench/fleet.py)

Steps: start the fake upstream and measure it alone (``direct``); then each gateway in
turn in front of it: start-up time (the median of 3 starts), idle memory, wrk at
concurrency 1/16/64, streams, memory after; then the micro-benchmarks and the issues'
targets. ``gw-cache-miss`` and ``gw-cache-hit`` are gw with its response cache on, asked
questions that always miss or always hit (bench/cache_load.py), started once each; with
one of them in the run, gw and they stay up until the end, for interleaved rounds at
concurrency 1 with direct (bench/interleaved.py), which the cache's targets are judged on.
Results are printed and saved to ``bench-results/<time>.json`` and
``bench-results/latest.json``, and the run's tables replace its kind's section of
``docs/results.md`` (not for ``--quick``, nor with ``--no-results-page``). Every process
started is stopped by pid at the end, on errors and on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Console

from bench import report, results_page
from bench.cache_load import (
    CACHE_TARGETS,
    cache_outcomes,
    outcome_note,
    outcome_problem,
    read_metrics,
    unique_lua_script,
)
from bench.errors import BenchError
from bench.fleet import DEFAULT_SECONDS, run_fleet
from bench.interleaved import run_interleaved
from bench.litellm_peer import install_litellm, start_litellm
from bench.loadgen import ensure_wrk, lua_script
from bench.measure import Settings, measure
from bench.micro import run_micro
from bench.processes import ProcessSet, clean_env
from bench.reload_stall import run_reload_stall
from bench.render import print_tables
from bench.results import (
    CACHE_TARGET_NAMES,
    TARGET_NAMES,
    Interleaved,
    MicroResult,
    RunInfo,
    TargetName,
    TargetResult,
)
from bench.targets import Target, direct_target, start_gw, start_relay
from bench.upstream import CLIENT_KEY, chat_body, start_upstream, upstream_origin
from bench.usage_reports import DEFAULT_ROWS, run_usage_reports

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "bench-results"
PAGE_PATH = "docs/results.md"
RESULTS_PAGE = REPO / PAGE_PATH
LITELLM_VENV = RESULTS_DIR / ".peers" / "litellm-venv"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench", description="Measure what gw adds on top of its upstream."
    )
    parser.add_argument(
        "--peer",
        choices=["litellm", "relay"],
        action="append",
        default=[],
        help="also measure this gateway: litellm (installed in its own virtualenv), or relay "
        "(bench/relay.py, a bare byte relay on gw's server stack: the floor)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds per wrk load step (default 5, --quick 1)",
    )
    parser.add_argument("--quick", action="store_true", help="a short smoke-test run")
    parser.add_argument(
        "--upstream-transport",
        default=None,
        metavar="KIND",
        help="gw's server.upstream_transport (default: gw's own default), to compare "
        "upstream clients run by run",
    )
    parser.add_argument(
        "--only",
        default=None,
        metavar="TARGETS",
        help="comma-separated subset of direct,relay,gw,gw-cache-miss,gw-cache-hit,litellm "
        "(default: direct, gw, gw-cache-miss, gw-cache-hit and each --peer)",
    )
    parser.add_argument(
        "--streams",
        type=int,
        default=None,
        help="streaming requests per target (default 400, --quick 60)",
    )
    parser.add_argument("--stream-concurrency", type=int, default=4)
    parser.add_argument("--no-micro", action="store_true", help="skip the micro-benchmarks")
    parser.add_argument(
        "--no-results-page",
        action="store_true",
        help="leave docs/results.md as it is (a --quick run always does)",
    )
    parser.add_argument(
        "--reload-stall",
        type=int,
        nargs="?",
        const=5000,
        default=None,
        metavar="ROUTES",
        help="only this: how long the requests of a one-at-a-time client wait while gw "
        "reloads a config of ROUTES routes (default 5000); bench/reload_stall.py",
    )
    parser.add_argument(
        "--usage-reports",
        type=int,
        nargs="?",
        const=DEFAULT_ROWS,
        default=None,
        metavar="ROWS",
        help="only this: how long the requests of a one-at-a-time client wait while usage "
        "reports and the dashboard read a ledger of ROWS usage rows (default 1000000); "
        "bench/usage_reports.py",
    )
    parser.add_argument(
        "--fleet",
        type=int,
        nargs="?",
        const=DEFAULT_SECONDS,
        default=None,
        metavar="SECONDS",
        help="only this: the latency PostgreSQL state and Redis limits add (c=1), and the "
        "requests/s of three gateways against one (c=64), SECONDS per load (default 10); "
        "bench/fleet.py",
    )
    return parser.parse_args(argv)  # fmt: skip


def chosen_targets(only: str | None, peers: list[str]) -> list[TargetName]:
    if only is None:
        wanted = {"direct", "gw", *CACHE_TARGET_NAMES, *peers}
    else:
        wanted = {name.strip() for name in only.split(",") if name.strip()}
        unknown = wanted - set(TARGET_NAMES)
        if unknown:
            raise SystemExit(f"--only: unknown target(s) {', '.join(sorted(unknown))}")
    return [name for name in TARGET_NAMES if name in wanted]


def settings_for(args: argparse.Namespace) -> Settings:
    quick = args.quick
    return Settings(
        duration_s=args.duration or (1.0 if quick else 5.0),
        warmup_s=1.0,
        streams=args.streams or (60 if quick else 400),
        stream_concurrency=args.stream_concurrency,
        settle_max_s=3.0 if quick else 10.0,
        starts=1 if quick else 3,
    )


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM: unwind like Ctrl-C, so every finally block runs


@dataclass(frozen=True)
class Session:
    """What every target's measurement shares within one run."""

    processes: ProcessSet
    direct: Target  # the upstream, measured as a target of its own
    origin: str  # the upstream's http://127.0.0.1:<port>
    wrk: str
    script: Path  # wrk's Lua script for the non-streaming request
    unique_script: Path  # the same request, asking a question of its own each time
    work: Path  # a temporary directory for state dirs and configs


class Bench:
    """One run: owns the processes, the console and the results gathered so far."""

    def __init__(self, args: argparse.Namespace, console: Console, stamp: str) -> None:
        self.args = args
        self.console = console
        self.settings = settings_for(args)
        self.names = chosen_targets(args.only, args.peer)
        self.logs = RESULTS_DIR / "logs" / stamp
        self.results: dict[TargetName, TargetResult] = {}
        self.micro: list[MicroResult] = []
        self.kept: dict[TargetName, Target] = {}  # up for the interleaved rounds
        self.interleaved: Interleaved | None = None

    def say(self, text: str) -> None:
        self.console.print(f"[dim]bench:[/dim] {text}", highlight=False)

    def run(self, work: Path) -> None:
        wrk = ensure_wrk(self.say)
        script = work / "post.lua"
        script.write_text(lua_script(chat_body(stream=False), CLIENT_KEY))
        unique_script = work / "post-unique.lua"
        unique_script.write_text(unique_lua_script(CLIENT_KEY))
        self.logs.mkdir(parents=True, exist_ok=True)
        with ProcessSet(self.logs) as processes:
            upstream = start_upstream(processes, REPO, clean_env())
            origin = upstream_origin(upstream)
            direct = direct_target(upstream)
            self.say(
                f"fake upstream at {origin}, first answer {direct.start_to_first_answer_s:.2f} s"
            )
            session = Session(processes, direct, origin, wrk, script, unique_script, work)
            for name in self.names:
                self.results[name] = self._measure(name, session)
                if name == "direct":
                    self._print_upstream()
            self.interleaved = self._interleave(session)
        if not self.args.no_micro:
            self.say("micro-benchmarks")
            self.micro = run_micro(repeats=3 if self.args.quick else 7)

    def _keeps(self, name: TargetName) -> bool:
        """Whether ``name`` stays up after its measurement, for the interleaved rounds:
        gw and the cache targets do when a cache target is in the run."""
        return name in ("gw", *CACHE_TARGET_NAMES) and any(
            chosen in CACHE_TARGETS for chosen in self.names
        )

    def _interleave(self, session: Session) -> Interleaved | None:
        """Interleaved c=1 rounds on direct and every target kept up; then they stop."""
        members = [(target, self._script(target, session)) for target in self.kept.values()]
        direct = self.results.get("direct")
        if direct is not None and direct.error is None:
            members.insert(0, (session.direct, session.script))
        try:
            if len(members) < 2 or not any(target.cache_role for target, _ in members):
                return None  # nothing to pair with, or nothing the rounds are for
            rounds = 3 if self.args.quick else 7
            self.say(f"interleaved rounds at c=1: {rounds} x {len(members)} targets")
            return run_interleaved(members, session.wrk, self.settings, rounds, self.say)
        except BenchError as error:
            self.console.print(f"[red]bench: interleaved rounds failed:[/red] {error}")
            return None
        finally:
            for target in self.kept.values():
                session.processes.stop(target.spawned)
            self.kept.clear()

    @staticmethod
    def _script(target: Target, session: Session) -> Path:
        """The wrk script of ``target``'s load: a question of its own each time for the
        cache-miss target, the same one for every other."""
        return session.unique_script if target.cache_role == "miss" else session.script

    def _start(self, name: TargetName, session: Session) -> Target:
        """``name`` started ``settings.starts`` times, each but the last stopped again; its
        start time is the median (one start on a shared machine swings by 20% and more).
        The cache targets start once: their start is gw's, which the gw target measures."""
        if name == "direct":
            return session.direct
        samples: list[float] = []
        starts = 1 if name in CACHE_TARGETS else self.settings.starts
        for attempt in range(1, starts + 1):
            target = self._start_once(name, session, attempt)
            samples.append(target.start_to_first_answer_s)
            if attempt < starts:
                session.processes.stop(target.spawned)
                log = target.spawned.log_path  # the next start writes the same name
                log.rename(log.with_name(f"{log.stem}-start{attempt}{log.suffix}"))
        return replace(
            target,
            start_to_first_answer_s=statistics.median(samples),
            start_samples_s=tuple(samples),
        )

    def _start_once(self, name: TargetName, session: Session, attempt: int) -> Target:
        if name == "gw":  # a new state dir each time: a database to create, as on first use
            state_dir = session.work / f"gw-state-{attempt}"
            transport = self.args.upstream_transport
            return start_gw(session.processes, session.origin, state_dir, transport)
        if name in CACHE_TARGETS:
            state_dir = session.work / f"{name}-state"
            transport, role = self.args.upstream_transport, CACHE_TARGETS[name]
            return start_gw(session.processes, session.origin, state_dir, transport, role)
        if name == "relay":
            return start_relay(session.processes, session.origin)
        version = install_litellm(LITELLM_VENV, self.logs / "litellm-install.log", self.say)
        work = session.work / "litellm"
        return start_litellm(session.processes, LITELLM_VENV, session.origin, work, version)

    def _measure(self, name: TargetName, session: Session) -> TargetResult:
        """Start ``name``, measure it and stop it; a failure becomes the row's error."""
        target: Target | None = None
        result: TargetResult | None = None
        try:
            target = self._start(name, session)
            measured = measure(target, session.wrk, self._script(target, session),
                               self.settings, self.say)  # fmt: skip
            result = self._checked(target, measured)
        except BenchError as error:
            self.console.print(f"[red]bench: {name} could not be measured:[/red] {error}")
            return TargetResult(name=name, error=str(error).splitlines()[0])
        finally:
            if target is not None and name != "direct":  # the upstream serves the others
                if result is not None and result.error is None and self._keeps(name):
                    self.kept[name] = target
                else:
                    session.processes.stop(target.spawned)
        return result

    def _checked(self, target: Target, result: TargetResult) -> TargetResult:
        """A cache target's result, with what gw counted of its cache lookups in the
        notes; an error when they are not what its workload must give."""
        if target.cache_role is None or target.state_dir is None:
            return result
        try:
            outcomes = cache_outcomes(read_metrics(target.chat_url, target.state_dir))
        except OSError as error:
            return replace(result, error=f"could not read gw's cache counters: {error}")
        note = outcome_note(outcomes)
        self.say(f"{target.name}: {note}")
        problem = outcome_problem(target.cache_role, outcomes)
        return replace(result, notes=(*result.notes, note), error=problem or result.error)

    def _print_upstream(self) -> None:
        direct: dict[TargetName, TargetResult] = {"direct": self.results["direct"]}
        self.console.print("[bold]The fake upstream alone (direct):[/bold]")
        print_tables(self.console, [report.load_table(direct), report.stream_table(direct)])

    def info(self, started: dt.datetime) -> RunInfo:
        settings = {
            "targets": list(self.names),
            "duration_s": self.settings.duration_s,
            "concurrencies": list(self.settings.concurrencies),
            "streams": self.settings.streams,
            "stream_concurrency": self.settings.stream_concurrency,
            "quick": bool(self.args.quick),
            "upstream_transport": self.args.upstream_transport,
            "command": " ".join(["scripts/bench", *sys.argv[1:]]),
        }
        return RunInfo(
            started_at=started.isoformat(timespec="seconds"),
            host=platform.node(),
            cpus=len(os.sched_getaffinity(0)),
            python=platform.python_version(),
            settings=settings,
        )


def save(document: dict[str, object], stamp: str) -> Path:
    RESULTS_DIR.mkdir(exist_ok=True)
    text = json.dumps(document, indent=2) + "\n"
    path = RESULTS_DIR / f"{stamp}.json"
    path.write_text(text)
    (RESULTS_DIR / "latest.json").write_text(text)
    return path


def git_commit() -> str | None:
    """The code measured: a short hash, "+ changes" when the tree differs from it (the
    results page itself aside, which the runs write)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],  # noqa: S607 - git from PATH, as a user runs it
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = [
            "git",
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ".",
            f":!{PAGE_PATH}",
        ]
        dirty = subprocess.run(
            changed,
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head} + changes" if dirty else head


def run_facts(started: dt.datetime, load: float | None) -> results_page.RunFacts:
    return results_page.RunFacts(
        started_at=started.isoformat(timespec="minutes"),
        command=" ".join(["scripts/bench", *sys.argv[1:]]),
        host=platform.node(),
        cpus=len(os.sched_getaffinity(0)),
        python=platform.python_version(),
        commit=git_commit(),
        load=load,
    )


def load_average() -> float | None:
    """The 1-minute load average: on a shared machine, what else ran says much."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


@dataclass(frozen=True)
class Start:
    """When a run started, and how busy the machine was then."""

    at: dt.datetime
    load: float | None


def publish(
    kind: results_page.Kind,
    start: Start,
    tables: list[report.TableData],
    console: Console,
    notes: str = "",
) -> None:
    """Replace ``kind``'s section of docs/results.md with this run's tables."""
    text = results_page.section(kind, run_facts(start.at, start.load), tables, notes)
    results_page.write_section(RESULTS_PAGE, kind, text)
    console.print(f"wrote this run's tables to {RESULTS_PAGE.relative_to(REPO)}")


def reload_stall(args: argparse.Namespace, console: Console, started: Start) -> int:
    """``--reload-stall``: bench/reload_stall.py alone, saved beside the other runs."""
    return single_scenario(
        "reload-stall", run_reload_stall, args.reload_stall, console, started,
        table=results_page.reload_stall_table, page=not args.no_results_page,
    )  # fmt: skip


def usage_reports(args: argparse.Namespace, console: Console, started: Start) -> int:
    """``--usage-reports``: bench/usage_reports.py alone, saved beside the other runs."""
    return single_scenario(
        "usage-reports", run_usage_reports, args.usage_reports, console, started,
        table=results_page.usage_reports_table, page=not args.no_results_page,
    )  # fmt: skip


def fleet(args: argparse.Namespace, console: Console, started: Start) -> int:
    """``--fleet``: bench/fleet.py alone, saved beside the other runs."""
    return single_scenario(
        "fleet", run_fleet, args.fleet, console, started,
        table=results_page.fleet_table, page=not args.no_results_page,
        notes=results_page.fleet_notes,
    )  # fmt: skip


Scenario = Callable[[int, Path, Path, Callable[[str], None]], dict[str, object]]


def single_scenario(
    name: results_page.Kind,
    scenario: Scenario,
    size: int,
    console: Console,
    started: Start,
    *,
    table: Callable[[dict[str, Any]], report.TableData],
    page: bool,
    notes: Callable[[dict[str, Any]], str] | None = None,
) -> int:
    """Run one scenario module alone; save its figures as ``bench-results/<name>-<time>.json``
    and, with ``page``, as its section of docs/results.md."""
    stamp = started.at.strftime("%Y%m%d-%H%M%S")
    say = functools.partial(console.print, highlight=False)
    try:
        with tempfile.TemporaryDirectory(prefix="gw-bench-") as work:
            result = scenario(size, Path(work), RESULTS_DIR / "logs" / stamp, say)
    except (BenchError, subprocess.CalledProcessError) as error:
        console.print(f"[red]bench: {error}[/red]")
        return 2
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}-{stamp}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"saved {path.relative_to(REPO)}")
    if page:
        publish(name, started, [table(result)], console, notes(result) if notes else "")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console()
    if not console.is_terminal:  # piped or logged: do not squeeze the tables into 80 columns
        console = Console(width=160)
    started = dt.datetime.now().astimezone()
    start = Start(at=started, load=load_average())
    stamp = started.strftime("%Y%m%d-%H%M%S")
    if args.reload_stall is not None:
        return reload_stall(args, console, start)
    if args.usage_reports is not None:
        return usage_reports(args, console, start)
    if args.fleet is not None:
        return fleet(args, console, start)
    bench = Bench(args, console, stamp)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        with tempfile.TemporaryDirectory(prefix="gw-bench-") as work:
            bench.run(Path(work))
    except BenchError as error:
        console.print(f"[red]bench: {error}[/red]")
        return 2
    except KeyboardInterrupt:
        console.print("[red]bench: interrupted; every process it started was stopped[/red]")
        return 130
    goals = report.evaluate_goals(bench.results, bench.micro, bench.interleaved)
    console.print()
    tables = [
        report.load_table(bench.results),
        report.stream_table(bench.results),
        report.process_table(bench.results),
        report.interleaved_table(bench.interleaved),
        report.micro_table(bench.micro),
        report.goal_table(goals),
    ]
    print_tables(console, tables)
    document = report.run_json(
        bench.info(started), bench.results, bench.micro, goals, bench.interleaved
    )
    path = save(document, stamp)
    console.print(f"saved {path.relative_to(REPO)} (and bench-results/latest.json); logs in "
                  f"{bench.logs.relative_to(REPO)}")  # fmt: skip
    if not (args.quick or args.no_results_page):
        publish("full", start, [tables[-1], *tables[:-1]], console)
    return 1 if any(result.error for result in bench.results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
