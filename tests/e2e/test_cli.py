"""The CLI as a user types it: init, config validate/show, traces and explain on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.gw_process import run_cli

EXAMPLES_DIR = Path(__file__).parents[2] / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.rglob("*.yaml"))  # examples/fleet/gw.yaml too


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: str(p.relative_to(EXAMPLES_DIR)))
def test_every_example_config_validates(example: Path) -> None:
    # As each example's header says to run it: with its own directory on PYTHONPATH
    # (examples/plugins holds the plugin its config names).
    done = run_cli("config", "validate", str(example), env={"PYTHONPATH": str(example.parent)})
    assert done.stdout.startswith("ok: ")


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("server:\n  port: eighty\n", "gw.yaml:2: server.port: expected `int`, got `str`"),
        ("routes:\n  - name: chat\n    targets:\n      - {provider: ghost, model: m}\n",
         "gw.yaml:4: routes[0].targets[0].provider: unknown provider 'ghost'"),
        ("providers:\n  - name: a\n    kind: openai\n    api_key: sk-live-123\n",
         "gw.yaml:4: providers[0].api_key: must be a reference"),
        ("server:\n  queue_timeout: soon\n", "gw.yaml:2: server.queue_timeout: 'soon' is not a duration"),
        ("polices: []\n", "gw.yaml:1: polices: unknown field; did you mean `policies`?"),
        ("routes: [\n", "gw.yaml:2: not valid YAML"),
    ],
)  # fmt: skip
def test_bad_config_fails_with_file_line_field_and_reason(
    tmp_path: Path, text: str, where: str
) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(text)
    done = run_cli("config", "validate", str(path), check=False)
    assert done.returncode != 0
    assert where.replace("gw.yaml", str(path)) in " ".join(done.stderr.split())
    assert "sk-live-123" not in done.stderr


def test_validate_json_reports_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text("server:\n  port: eighty\n")
    done = run_cli("config", "validate", str(path), "--json", check=False)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report == {
        "valid": False,
        "source": str(path),
        "line": 2,
        "field": "server.port",
        "reason": "expected `int`, got `str`",
    }


def test_init_writes_a_config_that_validates_and_refuses_to_overwrite(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_cli("init", "--state-dir", str(state))
    written = state / "gw.yaml"
    assert "openai_compatible" in written.read_text()
    assert run_cli("config", "validate", "--state-dir", str(state)).stdout.startswith("ok: ")
    again = run_cli("init", "--state-dir", str(state), check=False)
    assert again.returncode != 0
    assert "already exists" in again.stderr


def test_config_show_resolves_defaults_and_hides_header_values(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(
        "providers:\n  - name: p\n    kind: openai_compatible\n    base_url: http://127.0.0.1:9/v1\n"
        "    headers: {x-team-id: hunter2}\n"
    )
    shown = run_cli("config", "show", "--config", str(path), "--json")
    data = json.loads(shown.stdout)
    assert data["config"]["server"]["port"] == 8787
    assert data["config"]["providers"][0]["headers"] == {"x-team-id": "***"}
    assert "hunter2" not in run_cli("config", "show", "--config", str(path)).stdout


def test_env_and_flags_override_the_file(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text("server:\n  port: 9000\n  host: 127.0.0.1\n")
    shown = run_cli("config", "show", "--config", str(path), "--json", env={"GW_PORT": "9100"})
    assert json.loads(shown.stdout)["config"]["server"]["port"] == 9100


def test_explain_unknown_id_fails_on_stderr(tmp_path: Path) -> None:
    done = run_cli("explain", "req_doesnotexist", "--state-dir", str(tmp_path), check=False)
    assert done.returncode == 1
    assert "req_doesnotexist" in done.stderr


def test_traces_json_is_an_empty_array_on_a_fresh_state_dir(tmp_path: Path) -> None:
    assert json.loads(run_cli("traces", "--json", "--state-dir", str(tmp_path)).stdout) == []


def test_a_config_without_providers_is_valid_but_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text("auth: {mode: open}\n")
    checked = run_cli("config", "validate", str(path))
    assert "warning: the config defines no providers" in " ".join(checked.stderr.split())
    summary = json.loads(run_cli("config", "validate", str(path), "--json").stdout)
    assert summary["valid"] is True
    assert len(summary["warnings"]) == 1
    quiet = run_cli("config", "validate", str(path), "--json")
    assert quiet.stderr == ""


def test_a_bad_value_from_a_flag_or_variable_is_blamed_on_it(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    flagged = run_cli("serve", "--port", "99999", "--state-dir", state, check=False)
    assert flagged.returncode == 1
    assert "--port: server.port: must be between 0 and 65535" in flagged.stderr
    env = {"GW_PORT": "70000"}
    varied = run_cli("config", "show", "--state-dir", state, env=env, check=False)
    assert "$GW_PORT: server.port: must be between 0 and 65535" in varied.stderr


def test_version_as_json(tmp_path: Path) -> None:
    info = json.loads(run_cli("version", "--json", "--state-dir", str(tmp_path)).stdout)
    first = run_cli("version").stdout.splitlines()[0]
    assert first == f"gw {info['version']}"
    assert info["state_dir"] == str(tmp_path)
    assert info["zipapp"] is False
    assert set(info) == {
        "version", "python", "executable", "lock_sha256", "lock_source", "zipapp", "artifact",
        "state_dir",
    }  # fmt: skip


def test_a_key_that_would_be_born_expired_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text("tenants: [{name: t}]\n")
    state = tmp_path / "state"
    args = ("keys", "create", "--tenant", "t", "--config", str(config), "--state-dir", str(state))
    refused = run_cli(*args, "--expires", "2020-01-01", check=False)
    assert refused.returncode == 1
    assert "--expires 2020-01-01: that is already past" in refused.stderr
    assert not (state / "gw.db").exists()  # nothing stored
