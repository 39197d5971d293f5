"""The vault as a user drives it: `gw vault init/set/list/rm/rotate/status` through the
real CLI (secrets on stdin or a hidden prompt), files the real `age` tool reads and
writes, concurrent `gw vault set`, and a real gw that sends a vault secret upstream and
never writes it to its log or traces.

The keyring is forced off (`PYTHON_KEYRING_BACKEND`), as on a headless machine, so these
tests never touch a developer's keyring and the identity lives in `vault.key`.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from e2e.gw_process import GW, GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import FakeOpenAI

pytestmark = pytest.mark.e2e

NO_KEYRING = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
OPENAI_SECRET = "sk-vault-e2e-openai-7f3a9c1b2d4e6f80"
ADMIN_SECRET = "gw-admin-vault-e2e-0123456789abcdef0123"
PROMPT_TEXT = "tell me about vaults, please"


def age_binaries() -> tuple[str, str]:
    """`age` and `age-keygen`, or skip with the reason scripts/test recorded."""
    age, keygen = shutil.which("age"), shutil.which("age-keygen")
    if age is None or keygen is None:
        reason = os.environ.get("GW_AGE_UNAVAILABLE") or (
            "the age CLI is not installed (./scripts/test installs Debian's age package)"
        )
        pytest.skip(f"age CLI tests skipped: {reason}")
    return age, keygen


def environment() -> dict[str, str]:
    env = {**os.environ, **NO_KEYRING}
    env.pop("GW_VAULT_KEY", None)
    env.pop("GW_HOME", None)
    return env


def vault(
    state: Path, *args: str, stdin: str = "", check: bool = True
) -> subprocess.CompletedProcess[str]:
    """`gw vault ARGS --state-dir STATE`, with ``stdin`` piped in."""
    done = subprocess.run(
        [GW, "vault", *args, "--state-dir", str(state)],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment(),
        timeout=60,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"gw vault {' '.join(args)} failed ({done.returncode}):\n{done.stderr}"
        )
    return done


def one_line(text: str) -> str:
    """stderr as one line (the console wraps long messages)."""
    return " ".join(text.split())


def test_the_vault_commands_as_a_user_types_them(tmp_path: Path) -> None:
    state = tmp_path / "state"

    status = json.loads(vault(state, "status", "--json").stdout)
    assert status["exists"] is False
    assert status["identity_source"] is None
    missing = vault(state, "set", "openai", stdin="sk-x\n", check=False)
    assert missing.returncode == 1
    assert "run `gw vault init` first" in one_line(missing.stderr)

    init = vault(state, "init")
    assert f"created {state / 'vault.age'} (empty)" in init.stdout
    assert f"a new identity, stored in {state / 'vault.key'}" in init.stdout
    again = vault(state, "init", check=False)
    assert again.returncode == 1
    assert "already exists; nothing changed" in one_line(again.stderr)

    stored = vault(state, "set", "openai", stdin=OPENAI_SECRET + "\n")
    assert "stored openai" in stored.stdout
    vault(state, "set", "anthropic", stdin="sk-ant-e2e\n\n")  # one newline is dropped
    assert OPENAI_SECRET not in stored.stdout + stored.stderr

    assert vault(state, "list").stdout.split() == ["anthropic", "openai"]
    assert json.loads(vault(state, "list", "--json").stdout) == ["anthropic", "openai"]

    status = json.loads(vault(state, "status", "--json").stdout)
    assert status == {
        "path": str(state / "vault.age"),
        "exists": True,
        "identity_source": "file",
        "identity_location": str(state / "vault.key"),
        "recipient": status["recipient"],
        "secrets": 2,
        "key_file": str(state / "vault.key"),
        "keyring": status["keyring"],
    }
    assert status["recipient"].startswith("age1")
    assert status["keyring"].startswith("unavailable: ")
    text = vault(state, "status").stdout
    assert "file: " + str(state / "vault.key") in text

    rotated = json.loads(vault(state, "rotate", "--json").stdout)
    assert rotated["old_recipient"] == status["recipient"]
    assert rotated["recipient"] != status["recipient"]
    assert rotated["secrets"] == 2
    assert json.loads(vault(state, "status", "--json").stdout)["recipient"] == rotated["recipient"]

    vault(state, "rm", "anthropic")
    assert vault(state, "list").stdout.split() == ["openai"]
    gone = vault(state, "rm", "anthropic", check=False)
    assert gone.returncode == 1
    assert "no secret named 'anthropic'" in one_line(gone.stderr)

    for bad in (["set", "bad name"], ["set", "x" * 65]):
        refused = vault(state, *bad, stdin="sk-x\n", check=False)
        assert refused.returncode == 1
        assert "invalid secret name" in one_line(refused.stderr)
    empty = vault(state, "set", "empty", stdin="", check=False)
    assert empty.returncode == 1
    assert "no secret given" in one_line(empty.stderr)

    # A secret is never an argument: there is no place for one.
    extra = vault(state, "set", "openai", OPENAI_SECRET, check=False)
    assert extra.returncode == 1
    assert "never as an argument" in one_line(extra.stderr)
    assert OPENAI_SECRET not in extra.stdout + extra.stderr
    assert vault(state, "list").stdout.split() == ["openai"]

    (state / "vault.key").chmod(0o644)
    loose = vault(state, "list", check=False)
    assert loose.returncode == 1
    assert f"chmod 600 {state / 'vault.key'}" in one_line(loose.stderr)


def test_set_prompts_without_echo_on_a_terminal(tmp_path: Path) -> None:
    state = tmp_path / "state"
    vault(state, "init")
    secret = "sk-typed-at-a-prompt-0123"

    pid, fd = pty.fork()
    if pid == 0:  # the child: gw on a terminal
        env = environment()
        # pty.fork made this child's terminal the pty; it must become gw itself.
        os.execve(GW, [GW, "vault", "set", "typed", "--state-dir", str(state)], env)  # noqa: S606
    seen = read_until(fd, b"(input hidden): ")
    os.write(fd, secret.encode() + b"\n")
    seen += read_until(fd, b"stored typed")
    _, status = os.waitpid(pid, 0)
    os.close(fd)

    assert os.waitstatus_to_exitcode(status) == 0
    assert secret.encode() not in seen  # not echoed
    assert json.loads(vault(state, "list", "--json").stdout) == ["typed"]


def read_until(fd: int, marker: bytes, timeout: float = 30.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"never saw {marker!r}; got {seen!r}")
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                raise AssertionError(f"terminal closed before {marker!r}; got {seen!r}")
            seen += chunk
    return seen


def test_the_age_cli_decrypts_gw_s_vault(tmp_path: Path) -> None:
    age, _ = age_binaries()
    state = tmp_path / "state"
    vault(state, "init")
    vault(state, "set", "openai", stdin=OPENAI_SECRET + "\n")
    vault(state, "set", "anthropic", stdin="sk-ant-e2e\n")

    done = subprocess.run(
        [age, "-d", "-i", str(state / "vault.key"), str(state / "vault.age")],
        capture_output=True,
        check=True,
        timeout=30,
    )

    assert json.loads(done.stdout) == {"anthropic": "sk-ant-e2e", "openai": OPENAI_SECRET}


@pytest.mark.parametrize("armor", [False, True], ids=["binary", "armored"])
def test_gw_reads_a_vault_the_age_cli_encrypted(tmp_path: Path, armor: bool) -> None:
    age, _ = age_binaries()
    state = tmp_path / "state"
    vault(state, "init")
    recipient = json.loads(vault(state, "status", "--json").stdout)["recipient"]
    document = json.dumps({"openai": OPENAI_SECRET, "edited.by-hand_2": "sk-hand"})

    subprocess.run(
        [age, *(["-a"] if armor else []), "-r", recipient, "-o", str(state / "vault.age")],
        input=document.encode(),
        check=True,
        timeout=30,
    )

    assert vault(state, "list").stdout.split() == ["edited.by-hand_2", "openai"]
    vault(state, "set", "third", stdin="sk-third\n")  # and gw carries on writing it
    assert vault(state, "list").stdout.split() == ["edited.by-hand_2", "openai", "third"]


def test_an_identity_from_age_keygen_in_the_environment(tmp_path: Path) -> None:
    age, keygen = age_binaries()
    key_file = tmp_path / "key.txt"
    subprocess.run([keygen, "-o", str(key_file)], capture_output=True, check=True, timeout=30)
    state = tmp_path / "state"
    env_key = next(
        line for line in key_file.read_text().splitlines() if line.startswith("AGE-SECRET-KEY-")
    )
    env = {**environment(), "GW_VAULT_KEY": env_key}

    for args, stdin in ((["init"], ""), (["set", "openai"], OPENAI_SECRET + "\n")):
        subprocess.run(
            [GW, "vault", *args, "--state-dir", str(state)],
            input=stdin,
            text=True,
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
    status = subprocess.run(
        [GW, "vault", "status", "--json", "--state-dir", str(state)],
        env=env,
        text=True,
        check=True,
        capture_output=True,
        timeout=60,
    )

    assert json.loads(status.stdout)["identity_source"] == "env"
    assert not (state / "vault.key").exists()
    done = subprocess.run(
        [age, "-d", "-i", str(key_file), str(state / "vault.age")],
        capture_output=True,
        check=True,
        timeout=30,
    )
    assert json.loads(done.stdout) == {"openai": OPENAI_SECRET}


def test_a_foreign_vault_is_reported_and_kept(tmp_path: Path) -> None:
    age, keygen = age_binaries()
    state = tmp_path / "state"
    vault(state, "init")
    vault(state, "set", "openai", stdin=OPENAI_SECRET + "\n")
    stranger = tmp_path / "stranger.txt"
    subprocess.run([keygen, "-o", str(stranger)], capture_output=True, check=True, timeout=30)
    recipient = subprocess.run(
        [keygen, "-y", str(stranger)], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()
    foreign = subprocess.run(
        [age, "-r", recipient],
        input=b'{"theirs": "sk-theirs"}',
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout
    (state / "vault.age").write_bytes(foreign)

    for args in (["list"], ["set", "openai"], ["rm", "openai"], ["rotate"], ["status"]):
        done = vault(state, *args, stdin="sk-new\n", check=False)
        assert done.returncode == 1, args
        message = one_line(done.stderr)
        assert str(state / "vault.age") in message
        assert "does not decrypt with the vault identity" in message
        assert "untouched" in message

    assert (state / "vault.age").read_bytes() == foreign
    (state / "vault.age").write_bytes(b"not an age file")
    corrupt = vault(state, "list", check=False)
    assert "is not an age-encrypted file" in one_line(corrupt.stderr)


def test_concurrent_vault_set_calls_keep_every_name(tmp_path: Path) -> None:
    state = tmp_path / "state"
    vault(state, "init")
    names = [f"key-{index}" for index in range(6)]

    processes = [
        subprocess.Popen(
            [GW, "vault", "set", name, "--state-dir", str(state)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment(),
        )
        for name in names
    ]
    for name, process in zip(names, processes, strict=True):
        _, err = process.communicate(f"sk-{name}\n".encode(), timeout=60)
        assert process.returncode == 0, err.decode()

    assert vault(state, "list").stdout.split() == sorted(names)


# --- a real gw resolving vault: references ------------------------------------------------

CONFIG = """
auth: {{mode: keys, admin_key: vault:admin}}
providers:
  - {{name: upstream, kind: openai_compatible, base_url: "{base_url}", api_key: vault:openai}}
  - {{name: unset, kind: openai_compatible, base_url: "{base_url}", api_key: vault:not-set}}
routes:
  - name: chat
    targets: [{{provider: upstream, model: gpt-a}}]
  - name: broken
    targets: [{{provider: unset, model: gpt-a}}]
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
"""


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def vault_gw(tmp_path_factory: pytest.TempPathFactory, upstream: FakeOpenAI) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("vault-gw")
    state = home / "state"
    vault(state, "init")
    vault(state, "set", "openai", stdin=OPENAI_SECRET + "\n")
    vault(state, "set", "admin", stdin=ADMIN_SECRET + "\n")
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(base_url=upstream.base_url))
    server = GwServer(state, config, env=NO_KEYRING)
    server.env.pop("GW_VAULT_KEY", None)
    with server:
        yield server


def test_gw_sends_the_vault_secret_upstream_and_nowhere_else(
    vault_gw: GwServer, upstream: FakeOpenAI
) -> None:
    client = openai.OpenAI(base_url=vault_gw.base_url, api_key=ADMIN_SECRET, max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="chat", messages=[{"role": "user", "content": PROMPT_TEXT}]
    )
    assert raw.parse().choices[0].message.content
    assert upstream.requests[-1].headers["authorization"] == f"Bearer {OPENAI_SECRET}"
    answered = raw.headers["x-gw-request-id"]

    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(
            model="broken", messages=[{"role": "user", "content": PROMPT_TEXT}]
        )
    error: dict[str, Any] = caught.value.body  # type: ignore[assignment]
    assert error["code"] == "upstream_auth_failed"
    assert "vault:not-set" in error["message"]
    assert "`gw vault set not-set`" in error["message"]
    failed = caught.value.response.headers["x-gw-request-id"]

    explained = [vault_gw.wait_for_trace(request_id) for request_id in (answered, failed)]
    traces = vault_gw.cli("traces", "--json").stdout
    seen = json.dumps(explained) + traces + vault_gw.log()
    for path in vault_gw.state_dir.iterdir():
        if path.is_file() and path.name not in ("vault.age", "vault.key"):
            seen += path.read_bytes().decode("utf-8", errors="replace")
    assert OPENAI_SECRET not in seen
    assert ADMIN_SECRET not in seen
    assert "not-set" in seen  # the failure was recorded, by name


def test_the_admin_key_comes_from_the_vault(vault_gw: GwServer) -> None:
    with httpx.Client(base_url=vault_gw.url, timeout=30) as http:
        assert http.get("/admin/v1/health").status_code == 401
        allowed = http.get("/admin/v1/health", headers={"authorization": f"Bearer {ADMIN_SECRET}"})
    assert allowed.status_code == 200
    assert ADMIN_SECRET not in allowed.text


def test_gw_refuses_to_start_when_the_vault_cannot_be_opened(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG.format(base_url="http://127.0.0.1:9/v1"))
    state = tmp_path / "state"

    done = subprocess.run(
        [GW, "serve", "--port", "0", "--config", str(config), "--state-dir", str(state)],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=60,
        check=False,
    )

    assert done.returncode != 0
    message = one_line(done.stderr)
    assert "providers[0].api_key is vault:openai" in message
    assert "the vault cannot be opened" in message
    assert "run `gw vault init` first" in message
    assert not (state / "server.json").exists()


def test_a_rotated_secret_is_used_after_sighup(tmp_path: Path, upstream: FakeOpenAI) -> None:
    state = tmp_path / "state"
    vault(state, "init")
    vault(state, "set", "openai", stdin=OPENAI_SECRET + "\n")
    config = tmp_path / "gw.yaml"
    config.write_text(
        f'providers: [{{name: up, kind: openai_compatible, base_url: "{upstream.base_url}",'
        " api_key: vault:openai}]\nroutes: [{name: chat, targets: [{provider: up, model: m}]}]\n"
    )
    server = GwServer(state, config, env=NO_KEYRING)
    server.env.pop("GW_VAULT_KEY", None)
    with server:
        assert server.process is not None
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)

        def sent_key() -> str:
            client.chat.completions.create(
                model="chat", messages=[{"role": "user", "content": "hi"}]
            )
            return upstream.requests[-1].headers["authorization"]

        assert sent_key() == f"Bearer {OPENAI_SECRET}"
        rotated = vault(state, "set", "openai", stdin="sk-rotated-0123456789\n")
        pid = server.process.pid
        assert f"`kill -HUP {pid}` puts this change to use now" in one_line(rotated.stderr)
        assert sent_key() == f"Bearer {OPENAI_SECRET}"  # read at start: the old one still
        server.process.send_signal(signal.SIGHUP)
        wait_until(
            lambda: sent_key() == "Bearer sk-rotated-0123456789",
            lambda: f"the rotated key to be sent after SIGHUP:\n{server.log()}",
            interval=0.1,
        )
        assert "provider keys from the vault, if it names any, were read again" in server.log()
