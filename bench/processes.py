"""Start the servers under test, and stop every one of them by pid, workers included.

Each child gets its own session (so a Ctrl-C in the terminal reaches only the benchmark,
which then stops the children in order) and a log file that the error messages quote.
``ProcessSet`` is a context manager: leaving it, normally or by an exception, stops every
process it started, and any descendant still alive after its parent went.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from bench import proctree
from bench.errors import BenchError

_STOP_GRACE_S = 15.0
_POLL_S = 0.005


@dataclass
class Spawned:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    started: float  # time.perf_counter() just before the process was created

    @property
    def pid(self) -> int:
        return self.popen.pid

    def exited(self) -> bool:
        return self.popen.poll() is not None

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def failure(self, what: str) -> BenchError:
        """An error for ``what`` went wrong, with the end of the process's log."""
        status = f"exited with {self.popen.returncode}" if self.exited() else "still running"
        return BenchError(
            f"{self.name}: {what} ({status}); log {self.log_path}:\n{self.log_tail()}"
        )


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat: tells a process from a later one with the same pid."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()[19]


def _wait_gone(pids: Mapping[int, str | None], timeout: float) -> dict[int, str | None]:
    """Wait until these (pid, start time) processes are gone; return those still alive."""
    deadline = time.monotonic() + timeout
    alive = dict(pids)
    while alive and time.monotonic() < deadline:
        alive = {pid: t for pid, t in alive.items() if _start_time(pid) == t}
        time.sleep(_POLL_S * 4)
    return alive


def _signal(pids: Mapping[int, str | None], signum: int) -> None:
    for pid, start in pids.items():
        if _start_time(pid) == start:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)


class ProcessSet:
    """The processes one benchmark run started; see the module docstring."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._running: list[Spawned] = []

    def spawn(
        self,
        name: str,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Spawned:
        log_path = self.log_dir / f"{name}.log"
        with log_path.open("wb") as log:
            started = time.perf_counter()
            popen = subprocess.Popen(  # argv is built by the benchmark, never by input
                list(argv),
                cwd=cwd,
                env=None if env is None else dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        spawned = Spawned(name, popen, log_path, started)
        self._running.append(spawned)
        return spawned

    def stop(self, spawned: Spawned) -> None:
        """SIGTERM the process, SIGKILL it after a grace period, then its leftover workers."""
        family = {pid: _start_time(pid) for pid in proctree.tree(spawned.pid)}
        family.pop(spawned.pid, None)
        if not spawned.exited():
            with contextlib.suppress(ProcessLookupError):
                os.kill(spawned.pid, signal.SIGTERM)
            try:
                spawned.popen.wait(_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                spawned.popen.kill()
                spawned.popen.wait(_STOP_GRACE_S)
        left = _wait_gone(family, 2.0)
        _signal(left, signal.SIGTERM)
        _signal(_wait_gone(left, 3.0), signal.SIGKILL)
        if spawned in self._running:
            self._running.remove(spawned)

    def stop_all(self) -> None:
        """Stop every process still running, newest first; a second Ctrl-C meanwhile does
        not leave the others behind (it is raised again once all are stopped)."""
        interrupted: KeyboardInterrupt | None = None
        for spawned in reversed(list(self._running)):
            try:
                self.stop(spawned)
            except KeyboardInterrupt as again:
                interrupted = again
                spawned.popen.kill()
        if interrupted is not None:
            raise interrupted

    def __enter__(self) -> ProcessSet:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_all()


def log_match(spawned: Spawned, pattern: str) -> re.Match[str] | None:
    """The first match of ``pattern`` (multi-line) in the process's log so far."""
    try:
        text = spawned.log_path.read_text(errors="replace")
    except OSError:
        return None
    return re.search(pattern, text, re.MULTILINE)


def wait_for_log_line(spawned: Spawned, pattern: str, timeout: float) -> re.Match[str]:
    """Poll the process's log until a line matches ``pattern``; bounded by ``timeout``."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        match = log_match(spawned, pattern)
        if match is not None:
            return match
        if spawned.exited():
            break
        time.sleep(_POLL_S)
    raise spawned.failure(f"no line matching {pattern!r} within {timeout:.0f} s")


_PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM", "SYSTEMROOT")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment for a server under test: no GW_*, LITELLM_*, proxy or API-key
    variables from the caller's shell can change what is measured."""
    env = {name: os.environ[name] for name in _PASSED_ENV if name in os.environ}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env
