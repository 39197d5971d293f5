"""The container image's own files, tested without a container engine: its config serves in
keys mode with the admin key from the environment, its health check reads /readyz at the
port the server wrote, and the Dockerfile puts each file where the others expect it.
scripts/build-image builds and runs the image itself where an engine is available."""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from pathlib import Path

from e2e.gw_process import GwServer

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "container" / "gw.yaml"
HEALTHCHECK = ROOT / "container" / "healthcheck.py"
DOCKERFILE = ROOT / "Dockerfile"
CHAT = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}


def health(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HEALTHCHECK)],
        env={"GW_HOME": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_the_image_config_needs_a_key_and_the_health_check_follows_the_server(
    tmp_path: Path,
) -> None:
    admin_key = secrets.token_urlsafe(32)
    state = tmp_path / "state"
    # On loopback here (tests bind nothing else); the image binds 0.0.0.0 by GW_HOST.
    with GwServer(state, config=CONFIG, env={"GW_ADMIN_KEY": admin_key}) as gw:
        with gw.client() as http:
            refused = http.post("/v1/chat/completions", json=CHAT)
            assert refused.status_code == 401, refused.text
            headers = {"authorization": f"Bearer {admin_key}"}
            answer = http.post("/v1/chat/completions", json=CHAT, headers=headers)
            assert answer.status_code == 200, answer.text
            assert answer.headers["x-gw-route"] == "mock/mock-1"
        ready = health(state)
        assert ready.returncode == 0, ready.stdout + ready.stderr
        assert '"status":"ready"' in ready.stdout
    stopped = health(state)
    assert stopped.returncode == 1
    assert stopped.stdout.strip(), "an unhealthy check says why"


def test_the_health_check_fails_before_gw_has_started(tmp_path: Path) -> None:
    result = health(tmp_path)
    assert result.returncode == 1
    assert "gw is not serving yet" in result.stdout


def dockerfile_final_stage() -> list[str]:
    """The runtime stage's instructions, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    stages = [i for i, line in enumerate(instructions) if line.startswith("FROM ")]
    return instructions[stages[-1] :]


def test_the_dockerfile_wires_config_health_check_user_and_volume_together() -> None:
    stage = dockerfile_final_stage()
    copies = dict(
        reversed(line.split()[1:3]) for line in stage if line.startswith("COPY container/")
    )
    env = dict(re.findall(r"(GW_\w+)=(\S+)", " ".join(x for x in stage if x.startswith("ENV "))))
    assert copies.get(env["GW_CONFIG"]) == "container/gw.yaml"
    assert env["GW_HOST"] == "0.0.0.0"
    (volume,) = [line for line in stage if line.startswith("VOLUME ")]
    assert f'"{env["GW_HOME"]}"' in volume
    (user,) = [line.split()[1] for line in stage if line.startswith("USER ")]
    uid, _, gid = user.partition(":")
    assert uid.isdigit(), user  # numeric: a runAsNonRoot check needs no /etc/passwd
    assert int(uid) != 0, user
    assert gid != "0", user
    (check,) = [line for line in stage if line.startswith("HEALTHCHECK ")]
    script = next(path for path, source in copies.items() if source == "container/healthcheck.py")
    assert script in check
