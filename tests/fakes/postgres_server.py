"""A PostgreSQL server of a test's own on a free loopback port, to stop and start again
under load (the shared one at 127.0.0.1:5432 must not be stopped).

``initdb`` into a fresh directory (trust authentication, superuser ``postgres``), then
``pg_ctl start`` listening on 127.0.0.1 only, its socket in that directory. The data
survives ``stop`` and ``start`` (that is the point: a restart keeps the rows), and the
directory is deleted by ``remove``, or on leaving the ``with`` block.

PostgreSQL refuses to run as root: as root, each binary runs as the ``postgres`` system
user (``runuser``), in a directory made under the system's temporary directory (a
pytest ``tmp_path`` lies under a root-only directory that user cannot enter). Where the
binaries are missing the test fails in CI and is skipped elsewhere.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Final

import asyncpg
import pytest

from e2e.waiting import wait_until

BIN_DIR: Final = Path(os.environ.get("GW_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
SYSTEM_USER: Final = "postgres"
COMMAND_TIMEOUT_S: Final = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _unavailable(reason: str) -> None:
    message = f"a private PostgreSQL server cannot be started: {reason}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


class PostgresServer:
    def __init__(self) -> None:
        if not (BIN_DIR / "initdb").exists():
            _unavailable(f"no initdb in {BIN_DIR} (set GW_TEST_PG_BIN)")
        self._as: list[str] = []
        owner: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam(SYSTEM_USER)
            except KeyError:
                _unavailable(f"running as root and there is no {SYSTEM_USER!r} user")
            self._as = ["runuser", "-u", SYSTEM_USER, "--"]
        self.root = Path(tempfile.mkdtemp(prefix="gw-test-pg-"))
        if owner is not None:
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
        self.data = self.root / "data"
        self.log_path = self.root / "postgres.log"
        self.port = free_port()
        self._initialised = False

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            [*self._as, *args],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
            cwd=self.root,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{args[0]} failed ({done.returncode}):\n{done.stderr}\n{self.log()}"
            )

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def start(self) -> PostgresServer:
        """Start (the first time: create the cluster) and wait until it answers."""
        if not self._initialised:
            self._run(
                str(BIN_DIR / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            )
            self._initialised = True
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            str(BIN_DIR / "pg_ctl"),
            "start",
            "-D",
            str(self.data),
            "-l",
            str(self.log_path),
            "-o",
            options,
            "-w",
        )
        wait_until(self.answers, lambda: f"PostgreSQL on port {self.port}:\n{self.log()}", 30)
        return self

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m mode``: fast ends every session (a gateway's connections see
        their server gone), immediate is a crash that the next start recovers from."""
        if self._initialised and (self.data / "postmaster.pid").exists():
            self._run(str(BIN_DIR / "pg_ctl"), "stop", "-D", str(self.data), "-m", mode, "-w")

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def answers(self) -> bool:
        async def ping() -> bool:
            try:
                conn = await asyncpg.connect(self.url, timeout=2)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
                return False
            try:
                return bool(await conn.fetchval("SELECT 1"))
            finally:
                await conn.close()

        return asyncio.run(ping())

    def fetchval(self, sql: str) -> object:
        """One value of ``sql`` (a test's check of what the gateways wrote)."""

        async def query() -> object:
            conn = await asyncpg.connect(self.url, timeout=10)
            try:
                return await conn.fetchval(sql)
            finally:
                await conn.close()

        return asyncio.run(query())

    def fetchcol(self, sql: str) -> list[object]:
        async def query() -> list[object]:
            conn = await asyncpg.connect(self.url, timeout=10)
            try:
                return [row[0] for row in await conn.fetch(sql)]
            finally:
                await conn.close()

        return asyncio.run(query())

    def __enter__(self) -> PostgresServer:
        try:
            return self.start()
        except BaseException:
            self.remove()
            raise

    def __exit__(self, *exc: object) -> None:
        self.remove()
