"""Config loading: defaults, overrides, and errors that name file, line, field and reason."""

from __future__ import annotations

import pytest

from gw.config import BUILTIN_SOURCE, ConfigError, compile_snapshot, config_hash, load_config
from gw.config.units import ByteSize, Duration
from gw.errors import ModelNotFoundError


def test_no_file_means_the_builtin_mock() -> None:
    config = load_config(None, BUILTIN_SOURCE)
    snapshot = compile_snapshot(config, revision=1, source=BUILTIN_SOURCE)
    assert snapshot.resolve_model("mock").targets[0].provider == "mock"
    assert config.server.port == 8787
    assert config.server.max_body_bytes == ByteSize(8 * 1024 * 1024)


def test_empty_file_is_all_defaults() -> None:
    assert load_config("", "gw.yaml").routes == ()


def test_overrides_win_over_the_file() -> None:
    config = load_config("server:\n  port: 9000\n", "gw.yaml", {"server.port": 9100})
    assert config.server.port == 9100


@pytest.mark.parametrize(
    ("text", "path", "line", "reason"),
    [
        ("server:\n  port: '9'\n", "server.port", 2, "expected `int`, got `str`"),
        ("server:\n  max_body_bytes: lots\n", "server.max_body_bytes", 2, "is not a size"),
        ("routes:\n  - name: a/b\n    targets: [{provider: p, model: m}]\nproviders: [{name: p, kind: mock}]\n",
         "routes[0].name", 2, "must not contain '/'"),
        ("providers: [{name: p, kind: mock}, {name: p, kind: mock}]\n", "providers[1].name", 1, "defined twice"),
        ("providers: [{name: p, kind: openai_compatible}]\n", "providers[0].base_url", 1, "required"),
        ("policies:\n  - name: x\n    fallback: {on_error_codes: [oops]}\n",
         "policies[0].fallback.on_error_codes[0]", 3, "unknown error code 'oops'"),
        ("policies:\n  - name: x\n    retry: {max_attempts: 0}\n", "policies[0].retry.max_attempts", 3, "at least 1"),
        ("policies:\n  - name: x\n    deny_reason: closed\n", "policies[0].deny_reason", 3, "add `deny: true`"),
        ("policies:\n  - name: x\n    match: {min_prompt_tokens: 9, max_prompt_tokens: 3}\n",
         "policies[0].match.max_prompt_tokens", 3, "at least min_prompt_tokens (9)"),
        ("policies:\n  - name: x\n    match: {kinds: [chats]}\n", "policies[0].match.kinds[0]", 3, "chat"),
        ("- a\n- b\n", "", 1, "top level must be a mapping"),
        ('routes:\n  - name: "a\\nb"\n    targets: [{provider: p, model: m}]\nproviders: [{name: p, kind: mock}]\n',
         "routes[0].name", 2, "must not contain control"),
        ('routes:\n  - name: r\n    targets: [{provider: p, model: "m\\u202e"}]\nproviders: [{name: p, kind: mock}]\n',
         "routes[0].targets[0].model", 3, "must not contain control"),
        ('providers: [{name: "p\\u0007", kind: mock}]\n', "providers[0].name", 1, "must not contain control"),
        ('providers: [{name: p, kind: openai_compatible, base_url: "https://u:pw@x.test/v1"}]\n',
         "providers[0].base_url", 1, "must not hold credentials"),
        ('providers: [{name: p, kind: mock, headers: {Authorization: "Bearer sk-x"}}]\n',
         "providers[0].headers.Authorization", 1, "carries a credential"),
        ('providers: [{name: p, kind: mock, headers: {x-portkey-provider: openai, x-portkey-api-key: pk}}]\n',
         "providers[0].headers.x-portkey-api-key", 1, "carries a credential"),
    ],
)  # fmt: skip
def test_errors_name_the_field_and_line(text: str, path: str, line: int, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(text, "gw.yaml")
    assert caught.value.path == path
    assert caught.value.line == line
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f"gw.yaml:{line}:")


def test_provider_slash_model_resolves_only_for_known_providers() -> None:
    snapshot = compile_snapshot(load_config(None, BUILTIN_SOURCE), revision=1, source="b")
    assert snapshot.resolve_model("mock/other").name == "mock/other"
    with pytest.raises(ModelNotFoundError):
        snapshot.resolve_model("ghost/other")
    with pytest.raises(ModelNotFoundError):
        snapshot.resolve_model("unknown")


def test_hash_is_stable_and_content_sensitive() -> None:
    one = config_hash(load_config("server: {port: 1}\n", "a"))
    assert one == config_hash(load_config("server:\n  port: 1\n", "b"))
    assert one != config_hash(load_config("server: {port: 2}\n", "a"))


def test_hash_leaves_out_what_this_process_overrides() -> None:
    """Two gateways given one file and their own --port hash alike; the rest still counts."""
    text = "server: {port: 1}\n"
    first = load_config(text, "a", {"server.port": 8787, "state.url": "postgresql://db/gw"})
    second = load_config(text, "a", {"server.port": 8788, "state.url": "postgresql://db/gw"})
    overridden = ("server.port", "state.url")
    assert config_hash(first) != config_hash(second)
    assert config_hash(first, overridden) == config_hash(second, overridden)
    other = load_config("server: {port: 1, max_concurrency: 9}\n", "a", {"server.port": 8787})
    assert config_hash(other, overridden) != config_hash(first, overridden)


@pytest.mark.parametrize(
    ("text", "seconds"), [("150ms", 0.15), ("2s", 2.0), ("10m", 600.0), ("1h", 3600.0), (3, 3.0)]
)
def test_durations(text: str | int, seconds: float) -> None:
    assert Duration.parse(text).seconds == seconds
    assert Duration.parse(str(Duration.parse(text))).seconds == seconds


def test_a_bare_off_read_as_a_boolean_is_explained() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config("telemetry:\n  request_log: off\n", "gw.yaml")
    assert caught.value.path == "telemetry.request_log"
    assert "quote the word; one of: auto, json, rich, off" in caught.value.reason
    with pytest.raises(ConfigError) as number:
        load_config("server:\n  port: yes\n", "gw.yaml")
    assert "quote" not in number.value.reason  # quoting does not make a port
    quoted = load_config('telemetry:\n  request_log: "off"\n', "gw.yaml")
    assert quoted.telemetry.request_log == "off"
