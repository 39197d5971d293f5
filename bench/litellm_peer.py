"""The LiteLLM proxy as a peer: its own throwaway virtualenv, the same route, same upstream.

Installed once with ``pip install 'litellm[proxy]'`` into
``bench-results/.peers/litellm-venv`` and reused. Started the way LiteLLM's production
guide says (docs.litellm.ai/docs/proxy/prod, "Match Uvicorn Workers to CPU Count":
``--num_workers $(nproc)``), with debug logging off (``LITELLM_LOG=ERROR``,
``set_verbose: false``), telemetry and every callback off, no database, and a master key
(recent versions refuse to start without one; every client request carries it). The
model cost map is read from its bundled copy (``LITELLM_LOCAL_MODEL_COST_MAP``): this
machine has no internet, and fetching the remote map would add retries to the start-up.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from bench.errors import BenchError
from bench.probe import first_answer
from bench.processes import ProcessSet, clean_env
from bench.targets import Target
from bench.upstream import CHAT_PATH, CLIENT_KEY, ROUTE, UPSTREAM_MODEL, chat_body

INSTALL_TIMEOUT_S = 1800.0
START_TIMEOUT_S = 180.0
_STAMP = ".bench-installed"


def install_litellm(venv: Path, log_path: Path, say: Callable[[str], None]) -> str:
    """The LiteLLM version in ``venv``, installing it there first when needed."""
    python = venv / "bin" / "python"
    if not (venv / _STAMP).exists() or not (venv / "bin" / "litellm").exists():
        say(f"installing LiteLLM into {venv} (once; later runs reuse it)")
        venv.parent.mkdir(parents=True, exist_ok=True)
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            [str(python), "-m", "pip", "install", "--disable-pip-version-check", "litellm[proxy]"],
        ]
        with log_path.open("wb") as log:
            for step in steps:
                try:
                    done = subprocess.run(  # fixed argv, no shell
                        step,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        timeout=INSTALL_TIMEOUT_S,
                        check=False,
                    )
                except subprocess.TimeoutExpired:
                    raise BenchError(f"LiteLLM install timed out; log {log_path}") from None
                if done.returncode != 0:
                    tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-8:])
                    raise BenchError(f"LiteLLM could not be installed ({log_path}):\n{tail}")
        (venv / _STAMP).write_text("litellm[proxy]\n")
    asked = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return asked.stdout.strip() or "unknown"


def litellm_config(upstream_origin: str) -> str:
    """Route ``bench`` -> the fake upstream, as JSON (which YAML reads as well)."""
    config = {
        "model_list": [
            {
                "model_name": ROUTE,
                "litellm_params": {
                    "model": f"openai/{UPSTREAM_MODEL}",
                    "api_base": f"{upstream_origin}/v1",
                    "api_key": "sk-bench",
                },
            }
        ],
        "litellm_settings": {
            "telemetry": False,
            "set_verbose": False,
            "callbacks": [],
            "success_callback": [],
            "failure_callback": [],
        },
        "general_settings": {"master_key": CLIENT_KEY},
    }
    return json.dumps(config, indent=2)


def worker_count() -> int:
    """What ``nproc`` prints: the CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_litellm(
    processes: ProcessSet, venv: Path, upstream_origin: str, work_dir: Path, version: str
) -> Target:
    work_dir.mkdir(parents=True, exist_ok=True)
    config = work_dir / "litellm.yaml"
    config.write_text(litellm_config(upstream_origin))
    port, workers = _free_port(), worker_count()
    argv = [
        str(venv / "bin" / "litellm"),
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--num_workers",
        str(workers),
    ]
    env = clean_env(
        {
            "LITELLM_LOG": "ERROR",
            "LITELLM_MODE": "PRODUCTION",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
    )
    spawned = processes.spawn("litellm", argv, cwd=work_dir, env=env)
    url = f"http://127.0.0.1:{port}{CHAT_PATH}"
    elapsed = first_answer(spawned, lambda: url, chat_body(stream=False), START_TIMEOUT_S)
    notes = (
        f"LiteLLM {version}, {workers} uvicorn workers (--num_workers $(nproc), per its "
        "production guide), master key, LITELLM_LOG=ERROR, local cost map, no database",
    )
    return Target("litellm", url, spawned, elapsed, notes)
