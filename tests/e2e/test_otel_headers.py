"""OTLP header credentials through a live gw: a ``vault:NAME`` reference in
``telemetry.otlp.headers`` opens the vault at start and reaches the collector, while the
secret is written nowhere in gw's state; a reference that does not resolve, or a literal
credential, refuses the start and says what to write instead."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from gw.vault import Identity, OsKeyring, Vault

from e2e.gw_process import GwServer, run_cli
from fakes.otlp_collector import FakeCollector

pytestmark = pytest.mark.e2e

NO_KEYRING = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
SECRET = "Bearer glc_e2e0vault0otlp0secret0789"
CONFIG = """
telemetry:
  request_log: "off"
  otlp:
    enabled: true
    endpoint: "{collector}"
    headers: {{Authorization: "{authorization}", x-scope-orgid: tenant-e2e}}
providers:
  - {{name: mock, kind: mock}}
"""


def test_a_vault_reference_reaches_the_collector_and_is_stored_nowhere(tmp_path: Path) -> None:
    state = tmp_path / "state"
    environ = {"GW_VAULT_KEY": Identity.generate().secret_text(), **NO_KEYRING}
    vault = Vault(state, environ, lambda: OsKeyring.disabled("no keyring in e2e tests"))
    vault.init()
    vault.set("collector", SECRET)
    with FakeCollector() as collector:
        config = tmp_path / "gw.yaml"
        config.write_text(CONFIG.format(collector=collector.url, authorization="vault:collector"))
        with GwServer(state, config, env=environ) as gw:
            client = openai.OpenAI(base_url=gw.base_url, api_key="sk-unused", max_retries=0)
            client.chat.completions.create(
                model="mock/mock-1", messages=[{"role": "user", "content": "hi"}]
            )
        assert gw.process is not None
        assert gw.process.returncode == 0, gw.log()
        exports = collector.received()  # the flush at shutdown sent the span

    assert exports
    for export in exports:
        assert export.headers.get("authorization") == SECRET
        assert export.headers.get("x-scope-orgid") == "tenant-e2e"
    # The config revision gw recorded, its log and its database hold the reference only.
    for path in state.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def serve(tmp_path: Path, authorization: str) -> tuple[int, str]:
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG.format(collector="http://127.0.0.1:9", authorization=authorization))
    state = tmp_path / "state"
    args = ["serve", "--port", "0", "--state-dir", str(state), "--config", str(config)]
    done = run_cli(*args, env=NO_KEYRING, check=False)
    assert not (state / "server.json").exists()
    return done.returncode, " ".join(done.stderr.split())  # the console wraps long lines


def test_an_unset_variable_refuses_the_start_naming_the_field(tmp_path: Path) -> None:
    code, message = serve(tmp_path, "env:GW_E2E_UNSET_OTLP_AUTH")
    assert code != 0
    assert "telemetry.otlp.headers.Authorization is env:GW_E2E_UNSET_OTLP_AUTH" in message


def test_a_literal_credential_refuses_the_start_and_says_what_to_write(tmp_path: Path) -> None:
    code, message = serve(tmp_path, SECRET)
    assert code != 0
    assert "telemetry.otlp.headers.Authorization" in message
    assert "env:NAME or vault:NAME" in message
    assert SECRET not in message
