"""Start a real `gw serve` on an ephemeral loopback port, and run the `gw` CLI, as a user would."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from e2e.waiting import wait_until

GW = str(Path(sys.executable).parent / "gw")
START_TIMEOUT_S = 30.0
PROXY_VARIABLES = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
# Besides /admin/*: where gw wants the local admin token (or a key) in every auth mode.
ADMIN_PLANE = frozenset({"/", "/metrics"})


class GwServer:
    """A `gw serve` subprocess; ``url`` is read from the server.json it writes."""

    def __init__(
        self,
        state_dir: Path,
        config: Path | None = None,
        env: dict[str, str] | None = None,
        *,
        separate_stderr: bool = False,
    ):
        self.state_dir = state_dir
        self.config = config
        self.env = test_env(env)
        self.env.pop("GW_CONFIG", None)
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.log_path = state_dir / "serve.log"
        # stderr alone (gw's log lines), when a test reads it apart from stdout's banner.
        self.stderr_path = state_dir / "serve.stderr" if separate_stderr else None

    def start(self) -> GwServer:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        args = [GW, "serve", "--port", "0", "--state-dir", str(self.state_dir)]
        if self.config is not None:
            args += ["--config", str(self.config)]
        log = self.log_path.open("wb")
        errors = self.stderr_path.open("wb") if self.stderr_path else subprocess.STDOUT
        process = self.process = subprocess.Popen(args, stdout=log, stderr=errors, env=self.env)
        server_file = self.state_dir / "server.json"

        def url() -> str | None:
            if process.poll() is not None:
                raise RuntimeError(f"gw serve exited early:\n{self.log()}")
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                info = json.loads(server_file.read_text())
                if info.get("pid") == process.pid:
                    return str(info["url"])
            return None

        try:
            self.url = wait_until(url, lambda: f"gw serve to start:\n{self.log()}", START_TIMEOUT_S)
        except AssertionError:
            self.stop()
            raise
        return self

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def base_url(self) -> str:
        """What the OpenAI SDK calls base_url."""
        return f"{self.url}/v1"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(timeout=5)

    def __enter__(self) -> GwServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, "--state-dir", str(self.state_dir), env=self.env, check=check)

    def cli_json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json").stdout)

    def wait_for_trace(self, request_id: str, timeout: float = 10.0) -> dict[str, Any]:
        """Traces are written off the hot path: poll (bounded) until this one lands."""
        tries: list[subprocess.CompletedProcess[str]] = []

        def landed() -> dict[str, Any] | None:
            tries.append(self.cli("explain", request_id, "--json", check=False))
            return json.loads(tries[-1].stdout) if tries[-1].returncode == 0 else None

        return wait_until(
            landed, lambda: f"trace {request_id}: {tries[-1].stderr}", timeout, interval=0.1
        )

    def client(self, *, admin_token: bool = True) -> httpx.Client:
        """A client of this server. Like the gw CLI, it sends the local admin token that
        `gw serve` wrote to the state directory on admin-plane requests (``ADMIN_PLANE``)
        that carry no credential of their own, while the server is in open mode (a
        keys-mode test says which key it sends); ``admin_token=False``: never."""
        hooks = {"request": [self._send_admin_token]} if admin_token else {}
        return httpx.Client(base_url=self.url, timeout=30.0, event_hooks=hooks)

    @property
    def admin_token(self) -> str:
        """The local admin token this server wrote (a new one at every start)."""
        return (self.state_dir / "admin-token").read_text().strip()

    def _send_admin_token(self, request: httpx.Request) -> None:
        path = request.url.path
        if not (path in ADMIN_PLANE or path.startswith("/admin/")):
            return
        if "authorization" in request.headers or "x-api-key" in request.headers:
            return
        with contextlib.suppress(OSError, ValueError, KeyError):
            if json.loads((self.state_dir / "server.json").read_text())["auth_mode"] == "open":
                request.headers["authorization"] = f"Bearer {self.admin_token}"


def test_env(extra: dict[str, str] | None) -> dict[str, str]:
    """This process's environment without proxy variables (a machine's proxy must not
    decide where a test's upstream calls go), plus ``extra``."""
    kept = {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}
    return {**kept, **(extra or {})}


def run_cli(
    *args: str, env: dict[str, str] | None = None, check: bool = True, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [GW, *args],
        capture_output=True,
        text=True,
        env=test_env(env),
        timeout=60,
        cwd=cwd,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"gw {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done
