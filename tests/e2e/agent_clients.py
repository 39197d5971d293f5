"""Run real coding agents and agent SDKs against a gw on loopback, as a user would.

The clients are pinned in tests/agents/: Codex CLI, Claude Code and Gemini CLI from npm
(package.json and its lock), which ./scripts/test installs with ``npm ci`` into
build/agents; the OpenAI Agents SDK in its own venv, build/tools-agents (it cannot share
gw's dev venv: its websockets pin conflicts with uvicorn[standard]'s). When one is missing
the tests that need it skip with the reason ./scripts/test printed (GW_AGENTS_UNAVAILABLE);
in CI (``CI`` set) or with ``GW_REQUIRE_AGENTS=1`` they fail instead.

Each run gets an empty HOME and working directory, stdin from /dev/null, and only the
environment the client needs. Its proxy variables point at an `EgressTrap`, with loopback
exempt (NO_PROXY), so a call a client makes anywhere but gw is refused and recorded
instead of leaving the machine; the tests assert there was none.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes import anthropic_upstream, gemini_upstream, openai_upstream, responses_upstream
from fakes.anthropic_upstream import FakeAnthropic
from fakes.gemini_upstream import FakeGemini
from fakes.http_server import HttpRequest, Responder, ServerThread
from fakes.openai_upstream import FakeOpenAI
from fakes.responses_upstream import FakeResponses

ROOT = Path(__file__).parents[2]
NODE_BIN = ROOT / "build" / "agents" / "node_modules" / ".bin"
AGENTS_PYTHON = ROOT / "build" / "tools-agents" / "bin" / "python"
SDK_AGENT = ROOT / "tests" / "agents" / "sdk_agent.py"
RUN_TIMEOUT_S = 150.0  # one client run; the fakes answer at once, so this is a hang
LOOPBACK = "127.0.0.1,localhost,::1"
SECRET = "pelican"  # in the file an agent reads; the upstream must get it back
UPSTREAM_KEY = "sk-upstream-test"

# One route per upstream format, the same names in every agent test (and docs/guides/clients.md).
ROUTES = {
    "openai": ("oai", "openai_compatible", "gpt-a"),
    "anthropic": ("claude", "anthropic", "claude-sonnet-4-5"),
    "gemini": ("gem", "gemini", "gemini-2.5-flash"),
    "responses": ("oresp", "openai_responses", "gpt-5-mini"),
}


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail where the agents must be there (CI, GW_REQUIRE_AGENTS=1)."""
    if os.environ.get("CI") or os.environ.get("GW_REQUIRE_AGENTS") == "1":
        pytest.fail(f"the coding-agent tests need their clients: {reason}")
    pytest.skip(f"coding-agent tests skipped: {reason}")


def require(path: Path) -> Path:
    """``path`` if it is installed, else `unavailable` with the reason."""
    if not path.exists():
        unavailable(
            os.environ.get("GW_AGENTS_UNAVAILABLE")
            or f"{path.relative_to(ROOT)} is missing (./scripts/test installs the pinned "
            "clients of tests/agents/)"
        )
    return path


def node_client(name: str) -> Path:
    """The npm-installed CLI ``name`` (codex, claude, gemini)."""
    return require(NODE_BIN / name)


@contextmanager
def serve_gw(state: Path, *, keys_mode: bool = False, **upstreams: str) -> Iterator[GwServer]:
    """A gw with route ``via-<format>`` to each fake named by format (openai, anthropic,
    gemini), whose base URL is given. ``keys_mode``: with tenant ``agents`` and
    ``auth.mode: keys``, so every client must send a key (`create_key`)."""
    providers, routes = [], []
    for kind_name, base_url in upstreams.items():
        name, kind, model = ROUTES[kind_name]
        providers.append(
            f'  - {{name: {name}, kind: {kind}, base_url: "{base_url}", api_key: env:GW_TEST_KEY}}'
        )
        routes.append(
            f"  - {{name: via-{kind_name}, targets: [{{provider: {name}, model: {model}}}]}}"
        )
    lines = ["providers:", *providers, "routes:", *routes]
    if keys_mode:
        lines += ["tenants: [{name: agents}]", "auth: {mode: keys}"]
    config = state.parent / "gw.yaml"
    config.write_text("\n".join([*lines, ""]))
    with GwServer(state, config, env={"GW_TEST_KEY": UPSTREAM_KEY}) as server:
        yield server


def create_key(gw: GwServer) -> str:
    """A new API key of tenant ``agents``, as `gw keys create` prints it once."""
    assert gw.config is not None
    made = gw.cli_json("keys", "create", "--tenant", "agents", "--config", str(gw.config))
    key: str = made["key"]
    return key


class EgressTrap:
    """A forward proxy that refuses everything and records what was asked: where a client
    would have gone beyond loopback (``CONNECT host:port``, or an absolute URL)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._thread = ServerThread(self._handle, "127.0.0.1", 0, name="egress-trap")
        self.url = ""

    def __enter__(self) -> EgressTrap:
        self.url = f"http://127.0.0.1:{self._thread.start()}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.stop()

    async def _handle(self, request: HttpRequest, responder: Responder) -> None:
        self.seen.append(f"{request.method} {request.target}")
        body = b"gw tests: no network beyond loopback\n"
        await responder.send(403, [("content-type", "text/plain"), ("connection", "close")], body)


@dataclass
class Run:
    """One finished client run."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    egress: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (
            f"{Path(self.argv[0]).name} exited {self.returncode}\n"
            f"--- stdout\n{self.stdout[-6000:]}\n--- stderr\n{self.stderr[-6000:]}\n"
            f"--- refused egress: {self.egress}"
        )

    def ok(self) -> Run:
        """This run, after checking it succeeded and stayed on loopback."""
        assert self.returncode == 0, self.describe()
        assert not self.egress, f"the client reached beyond loopback\n{self.describe()}"
        return self


class Sandbox:
    """An empty HOME and working directory for one client run, and the run itself."""

    def __init__(self, root: Path, trap: EgressTrap) -> None:
        self.home = root / "home"
        self.work = root / "work"
        self.home.mkdir(parents=True)
        self.work.mkdir()
        self.trap = trap

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        node_dir = Path(shutil.which("node") or "/usr/bin/node").parent
        proxies = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
        return {
            "PATH": f"{node_dir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            **dict.fromkeys(proxies, self.trap.url),
            **{name.lower(): self.trap.url for name in proxies},
            "NO_PROXY": LOOPBACK,
            "no_proxy": LOOPBACK,
            **extra,
        }

    def run(self, argv: list[str | Path], env: dict[str, str]) -> Run:
        args = [str(arg) for arg in argv]
        before = len(self.trap.seen)
        try:
            done = subprocess.run(
                args,
                cwd=self.work,
                env=self.env(env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as timeout:
            out = _text(timeout.stdout)
            err = _text(timeout.stderr)
            raise AssertionError(
                f"{args[0]} ran over {RUN_TIMEOUT_S:.0f}s\n--- stdout\n{out}\n--- stderr\n{err}"
            ) from None
        return Run(args, done.returncode, done.stdout, done.stderr, self.trap.seen[before:])

    def write(self, name: str, text: str) -> Path:
        path = self.work / name
        path.write_text(text)
        return path


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


@pytest.fixture(scope="module")
def egress_trap() -> Iterator[EgressTrap]:
    with EgressTrap() as trap:
        yield trap


@pytest.fixture
def sandbox(tmp_path: Path, egress_trap: EgressTrap) -> Sandbox:
    return Sandbox(tmp_path / "agent", egress_trap)


def trace_ids(gw: GwServer) -> set[str]:
    """The request ids of gw's recent traces (call before a run, for `new_traces`)."""
    return {row["request_id"] for row in gw.cli_json("traces", "--limit", "500")}


def new_traces(gw: GwServer, known: set[str], at_least: int) -> list[dict[str, Any]]:
    """``gw explain --json`` of each trace not in ``known``, oldest first, once at least
    ``at_least`` have landed (traces are written off the hot path: polled, bounded)."""

    seen: list[list[dict[str, Any]]] = []

    def landed() -> list[dict[str, Any]] | None:
        rows = [r for r in gw.cli_json("traces", "--limit", "500") if r["request_id"] not in known]
        seen.append(rows)
        return rows if len(rows) >= at_least else None

    rows = wait_until(landed, lambda: f"{at_least} new trace(s); got {seen[-1]}", interval=0.1)
    return [gw.cli_json("explain", row["request_id"]) for row in reversed(rows)]


def summary(traces: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a failed trace assertion prints: endpoint, status, error, who answered."""
    return [
        (t["endpoint"], t["status"], (t.get("error") or {}).get("message"), t["answered_by"])
        for t in traces
    ]


def jsonl(text: str) -> list[dict[str, Any]]:
    """The JSON objects of JSON-lines output; other lines are skipped."""
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


# -- the fakes, scripted and read alike whatever their format ----------------------------

FAKES: dict[str, Any] = {
    "openai": FakeOpenAI,
    "anthropic": FakeAnthropic,
    "gemini": FakeGemini,
    "responses": FakeResponses,
}
# The provider name gw calls each fake's upstream by (``answered_by.provider``).
PROVIDERS = {upstream: provider for upstream, (provider, _, _) in ROUTES.items()}


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, Any]]:
    """One fake upstream of each format (ROUTES), by format name."""
    with ExitStack() as stack:
        yield {name: stack.enter_context(fake()) for name, fake in FAKES.items()}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, Any]) -> Iterator[GwServer]:
    """A gw in open mode with route ``via-<format>`` to each fake."""
    state = tmp_path_factory.mktemp("agents") / "state"
    with serve_gw(state, **{name: fake.base_url for name, fake in fakes.items()}) as server:
        yield server


@pytest.fixture(scope="module")
def keys_gw(tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, Any]) -> Iterator[GwServer]:
    """The same in keys mode (tenant ``agents``)."""
    state = tmp_path_factory.mktemp("agents-keys") / "state"
    urls = {name: fake.base_url for name, fake in fakes.items()}
    with serve_gw(state, keys_mode=True, **urls) as server:
        yield server


HELLO = "Hello from gw."


def check_keys_mode(
    gw: GwServer,
    fake: Any,
    upstream: str,
    *,
    run: Callable[[Sandbox, str], Run],
    said: Callable[[Run], str],
    root: Path,
    trap: EgressTrap,
) -> None:
    """In keys mode a client's run with a key from `gw keys create` is answered and traced
    under its tenant, and one with a wrong key is refused (401) before any upstream call.
    ``run(sandbox, key)`` runs the client; ``said(run)`` is the answer it printed."""
    fake.clear()
    fake.enqueue(behavior(upstream, HELLO))
    known = trace_ids(gw)
    good = run(Sandbox(root / "good", trap), create_key(gw))
    assert said(good) == HELLO, good.describe()
    [trace] = new_traces(gw, known, 1)
    assert (trace["status"], trace["tenant"]) == (200, "agents"), summary([trace])
    known.add(trace["request_id"])
    bad = run(Sandbox(root / "bad", trap), "sk-not-a-gw-key")
    assert bad.returncode != 0, bad.describe()
    refused = new_traces(gw, known, 1)
    assert {(t["status"], (t["error"] or {}).get("code")) for t in refused} == {
        (401, "authentication_failed")
    }, summary(refused)
    assert len(fake.requests) == 1  # the refused one never reached the upstream


WIRES: dict[str, Any] = {
    "openai": openai_upstream,
    "anthropic": anthropic_upstream,
    "gemini": gemini_upstream,
    "responses": responses_upstream,
}


def behavior(upstream: str, turn: str | tuple[str, str]) -> Any:
    """The fake's scripted answer for one turn: a text, or a (tool name, arguments JSON)
    call, in ``upstream``'s format (openai, anthropic, gemini, responses)."""
    wire = WIRES[upstream]
    if not isinstance(turn, tuple):
        return wire.Behavior(text=turn)
    if upstream == "gemini":
        return wire.Behavior(tool_calls=(turn,))
    return wire.Behavior(tool_call=turn)


def offered_tools(upstream: str, body: dict[str, Any]) -> set[str]:
    """The names of the function tools a request offered, in ``upstream``'s format."""
    if upstream == "openai":
        return {tool["function"]["name"] for tool in body["tools"]}
    if upstream == "anthropic":
        return {tool["name"] for tool in body["tools"] if "name" in tool}
    if upstream == "responses":
        return {tool["name"] for tool in body["tools"] if tool["type"] == "function"}
    return {f["name"] for tool in body["tools"] for f in tool.get("functionDeclarations", ())}


def tool_results(upstream: str, body: dict[str, Any]) -> list[Any]:
    """The content of each tool result a request carries, in ``upstream``'s format."""
    if upstream == "openai":
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if upstream == "anthropic":
        last = body["messages"][-1]["content"]
        return [b["content"] for b in last if b["type"] == "tool_result"]
    if upstream == "responses":
        return [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
    return [
        part["functionResponse"]["response"]
        for turn in body["contents"]
        for part in turn["parts"]
        if "functionResponse" in part
    ]
