"""``gw config schema``'s JSON Schema (gw/config/json_schema.py), checked by a real validator
(jsonschema, draft 2020-12) against gw's own loader: every config gw ships or its tests load
validates, and what the loader refuses in ways a schema can state is refused too."""

from __future__ import annotations

import ast
import functools
import string
from collections import defaultdict
from pathlib import Path

import jsonschema
import pytest

from gw.cli.init_cmd import example_config
from gw.cli.options import override_names
from gw.config import ConfigError, load_config
from gw.config.builtin import DEFAULT_CONFIG
from gw.config.json_schema import DIALECT, config_json_schema
from gw.config.yamlmap import parse_yaml

TESTS = Path(__file__).resolve().parents[2]


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(config_json_schema())


def _schema_accepts(text: str) -> bool:
    data, _ = parse_yaml(text, "gw.yaml")
    return _validator().is_valid({} if data is None else data)


def _loader_accepts(text: str) -> bool:
    try:
        load_config(text, "gw.yaml")
    except ConfigError:
        return False
    return True


def test_it_is_a_valid_draft_2020_12_schema() -> None:
    schema = config_json_schema()
    assert schema["$schema"] == DIALECT
    jsonschema.Draft202012Validator.check_schema(schema)


def test_gw_init_config_and_the_builtin_default_validate() -> None:
    _validator().validate(parse_yaml(example_config(), "example.yaml")[0])
    _validator().validate(DEFAULT_CONFIG)


def test_descriptions_name_what_else_sets_a_field() -> None:
    server = config_json_schema(override_names())["properties"]["server"]["properties"]
    assert "Also set by `GW_PORT`, `gw serve --port`." in server["port"]["description"]
    assert (
        "Also set by"
        not in config_json_schema()["properties"]["server"]["properties"]["port"]["description"]
    )


P = "providers: [{name: p, kind: mock}]\n"
R = P + "routes: [{name: r, targets: [{provider: p, model: m}]}]\n"

# (case, file): the loader and the schema both take it.
ACCEPTED = [
    ("empty sections", "server: {}\nauth: {}\nproviders: []\n"),
    ("port bounds", "server: {port: 0}\n"),
    ("top port", "server: {port: 65535}\n"),
    ("durations", "server: {queue_timeout: 150ms, body_timeout: 2.5, drain_timeout: '1.5 h'}\n"),
    ("zero duration where allowed", "server: {queue_timeout: 0s}\n"),
    ("sizes", "server: {max_body_bytes: 512KiB, max_upstream_body_bytes: 16777216}\n"),
    ("a fraction of a unit", "server: {max_body_bytes: 0.5KiB}\n"),
    ("secret references", "auth: {mode: keys, admin_key: env:GW_ADMIN_KEY}\n"),
    ("null where optional", "auth: {mode: null, admin_key: null}\n"),
    ("dashboard link at its bound", "auth: {dashboard_link_ttl: 3600}\n"),
    ("quoted off", "telemetry: {request_log: 'off'}\n"),
    ("otlp on", "telemetry: {otlp: {enabled: true, endpoint: 'http://127.0.0.1:4318'}}\n"),
    ("compatible with base_url",
     "providers: [{name: l, kind: openai_compatible, base_url: 'http://127.0.0.1:11434/v1'}]\n"),
    ("azure by accounts", "providers: [{name: z, kind: azure_openai, accounts: "
     "[{name: a, base_url: 'https://a.openai.azure.com', api_key: vault:za}]}]\n"),
    ("headers", "providers: [{name: o, kind: openai, headers: {x-team: blue}}]\n"),
    ("mock options", "providers: [{name: p, kind: mock, mock: {failure_rate: 1, fail_status: 500}}]\n"),
    ("probe at its floor", "providers: [{name: p, kind: openai, probe: {interval: 0.1}}]\n"),
    ("a route", R + "models: [{provider: p, model: m, input_per_mtok: 0, capabilities: [tools]}]\n"),
    ("weights", P + "routes: [{name: r, strategy: weighted, targets: [{provider: p, model: m, weight: 0}, {provider: p, model: n, weight: 2}]}]\n"),
    ("a full policy", R + "policies: [{name: d, priority: 3, match: {routes: ['*'], streaming: false}, "
     "retry: {max_attempts: 1, multiplier: 1}, fallback: {on_error_codes: [rate_limited]}, "
     "hedge: {after: 2s}, limits: {max_output_tokens: 1, max_cost_per_request_usd: 0}}]\n"),
    ("tenants", R + "tenants: [{name: t, allowed_routes: [r], limits: {requests_per_minute: 60}, "
     "budget: {daily_usd: 5.0}}]\n"),
    ("a budget of nothing", "tenants: [{name: t, budget: {daily_usd: 0, monthly_usd: 0}}]\n"),
    ("the smallest limits", "tenants: [{name: t, limits: {requests_per_minute: 1, "
     "tokens_per_minute: 1, max_concurrency: 1}}]\n"),
    ("short timeouts", "policies: [{name: d, timeout: {total: 1ms, per_attempt: 1ms, connect: 1ms, "
     "first_token: 1ms, stream_idle: 1ms}}]\n"),
    ("health", "health: {error_rate: 1.0, min_requests: 1, retry_budget: {ratio: 0, min_retries: 0}}\n"),
    ("state", "state: {usage_max_age: 90d, trace_max_bytes: 1GiB}\n"),
    ("background", "responses: {background: {enabled: true, concurrency: 1}}\n"),
]  # fmt: skip

# (case, file): the loader and the schema both refuse it.
REFUSED = [
    ("unknown top-level key", "servers: {}\n"),
    ("unknown key in a section", "server: {prot: 8787}\n"),
    ("unknown key in a list item", "providers: [{name: p, kind: mock, region: eu}]\n"),
    ("unknown key deep down", "health: {retry_budget: {share: 0.1}}\n"),
    ("a section that is null", "server:\n"),
    ("text for an integer", "server: {port: '8787'}\n"),
    ("boolean for an integer", "server: {port: true}\n"),
    ("boolean for a duration", "server: {queue_timeout: true}\n"),
    ("a duration with no unit gw knows", "server: {queue_timeout: 2 weeks}\n"),
    ("a negative duration", "server: {queue_timeout: -1}\n"),
    ("a size with no unit gw knows", "server: {max_body_bytes: 8 MiBs}\n"),
    ("a size of nothing", "server: {max_body_bytes: 0}\n"),
    ("a size of nothing, with a unit", "server: {max_body_bytes: 0KiB}\n"),
    ("a fraction of a byte", "server: {max_body_bytes: 1.5}\n"),
    ("a list for a section", "telemetry: [metrics]\n"),
    ("a word for a list", "server: {cors_origins: 'http://a'}\n"),
    ("a number for a header", "providers: [{name: o, kind: openai, headers: {x-n: 1}}]\n"),
    ("unknown provider kind", "providers: [{name: p, kind: bedrock}]\n"),
    ("unknown strategy", R.replace("targets:", "strategy: fastest, targets:")),
    ("bare off", "telemetry: {request_log: off}\n"),
    ("unknown transport", "server: {upstream_transport: curl}\n"),
    ("unknown capability", "providers: [{name: p, kind: mock}]\nmodels: [{provider: p, model: m, capabilities: [telepathy]}]\n"),
    ("unknown error code", "policies: [{name: d, fallback: {on_error_codes: [oops]}}]\n"),
    ("unknown auth mode", "auth: {mode: closed}\n"),
    ("provider without kind", "providers: [{name: p}]\n"),
    ("route without targets", P + "routes: [{name: r}]\n"),
    ("route with no target", P + "routes: [{name: r, targets: []}]\n"),
    ("probe without interval", "providers: [{name: p, kind: openai, probe: {}}]\n"),
    ("policy without name", "policies: [{retry: {max_attempts: 2}}]\n"),
    ("port too high", "server: {port: 70000}\n"),
    ("port below 0", "server: {port: -1}\n"),
    ("no concurrency", "server: {max_concurrency: 0}\n"),
    ("per-host cap of 0", "server: {upstream_max_connections_per_host: 0}\n"),
    ("no attempts", "policies: [{name: d, retry: {max_attempts: 0}}]\n"),
    ("a shrinking backoff", "policies: [{name: d, retry: {multiplier: 0.5}}]\n"),
    ("hedging at once", "policies: [{name: d, hedge: {after: 0s}}]\n"),
    ("no output allowed", "policies: [{name: d, limits: {max_output_tokens: 0}}]\n"),
    ("a negative cost ceiling", "policies: [{name: d, limits: {max_cost_per_request_usd: -1}}]\n"),
    ("a timeout of no time", "policies: [{name: d, timeout: {total: 0s}}]\n"),
    ("no time for a first token", "policies: [{name: d, timeout: {first_token: 0}}]\n"),
    ("a negative budget", "tenants: [{name: t, budget: {daily_usd: -1}}]\n"),
    ("a negative monthly budget", "tenants: [{name: t, budget: {monthly_usd: -0.5}}]\n"),
    ("a negative rate", "tenants: [{name: t, limits: {requests_per_minute: -5}}]\n"),
    ("a rate of no tokens", "tenants: [{name: t, limits: {tokens_per_minute: 0}}]\n"),
    ("no tenant concurrency", "tenants: [{name: t, limits: {max_concurrency: 0}}]\n"),
    ("a negative weight", P + "routes: [{name: r, targets: [{provider: p, model: m, weight: -1}]}]\n"),
    ("a failure rate over 1", "providers: [{name: p, kind: mock, mock: {failure_rate: 1.5}}]\n"),
    ("a negative price", P + "models: [{provider: p, model: m, input_per_mtok: -1}]\n"),
    ("an error rate of 0", "health: {error_rate: 0}\n"),
    ("a window of 0s", "health: {window: 0s}\n"),
    ("a window of 0", "health: {window: 0}\n"),
    ("negative retries", "health: {retry_budget: {min_retries: -1}}\n"),
    ("no degrading", "health: {degraded_after: 0, unhealthy_after: 9}\n"),
    ("traces kept for no time", "state: {trace_max_age: 0d}\n"),
    ("a login link for hours", "auth: {dashboard_link_ttl: 7200}\n"),
    ("probes too often", "providers: [{name: p, kind: openai, probe: {interval: 0.01}}]\n"),
    ("no background workers", "responses: {background: {concurrency: 0}}\n"),
    ("a slash in a provider name", "providers: [{name: a/b, kind: mock}]\n"),
    ("a blank provider name", "providers: [{name: '  ', kind: mock}]\n"),
    ("a slash in a route name", P + "routes: [{name: a/b, targets: [{provider: p, model: m}]}]\n"),
    ("a control character in a model", P + 'routes: [{name: r, targets: [{provider: p, model: "m\\x07"}]}]\n'),
    ("a blank tenant", "tenants: [{name: ''}]\n"),
    ("a key in the file", "providers: [{name: o, kind: openai, api_key: sk-live-123}]\n"),
    ("a reference with no name", "providers: [{name: o, kind: openai, api_key: 'env:'}]\n"),
    ("an admin key in the file", "auth: {admin_key: hunter2hunter2hunter2hunter2hunter2}\n"),
    ("a base URL that is not http", "providers: [{name: o, kind: openai, base_url: 'ftp://x'}]\n"),
    ("a base URL with credentials", "providers: [{name: o, kind: openai, base_url: 'https://u:pw@api.example.com/v1'}]\n"),
    ("an account URL with credentials", "providers: [{name: o, kind: openai, accounts: [{name: a, base_url: 'https://u:pw@h/v1'}]}]\n"),
    ("compatible without base_url", "providers: [{name: l, kind: openai_compatible}]\n"),
    ("azure with an account lacking a URL", "providers: [{name: z, kind: azure_openai, accounts: "
     "[{name: a, base_url: 'https://a.example.com'}, {name: b}]}]\n"),
    ("otlp on without endpoint", "telemetry: {otlp: {enabled: true}}\n"),
    ("otlp endpoint without scheme", "telemetry: {otlp: {endpoint: 'collector:4318'}}\n"),
    ("an unquoted date for a version", "providers: [{name: c, kind: anthropic, api_version: 2023-06-01}]\n"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "text"), ACCEPTED, ids=[case for case, _ in ACCEPTED])
def test_what_the_loader_takes_validates(case: str, text: str) -> None:
    assert _loader_accepts(text), f"{case}: the loader should take it"
    data, _ = parse_yaml(text, "gw.yaml")
    _validator().validate(data)


@pytest.mark.parametrize(("case", "text"), REFUSED, ids=[case for case, _ in REFUSED])
def test_what_the_loader_refuses_the_schema_refuses(case: str, text: str) -> None:
    assert not _loader_accepts(text), f"{case}: the loader should refuse it"
    assert not _schema_accepts(text), f"{case}: the schema takes it"


def test_the_error_points_at_the_field() -> None:
    data, _ = parse_yaml("server: {port: 8787, prot: 1}\nproviders: [{name: p, kind: nope}]\n", "x")
    errors = {error.json_path: error.validator for error in _validator().iter_errors(data)}
    assert errors == {"$.server": "additionalProperties", "$.providers[0].kind": "enum"}


# Configs written in the test suite itself (tests/e2e above all): every string in a test
# module that holds a `providers:` section. Format fields ({upstream}, {port}) get a URL;
# a text that then does not load (a port that wanted a number) is not counted.
_FILLER = "http://127.0.0.1:9"


def _test_configs() -> list[tuple[str, str]]:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = _text_of(node)
            if text is not None and ("\nproviders:" in text or text.startswith("providers:")):
                found.append((f"{path.relative_to(TESTS)}:{node.lineno}", text))  # type: ignore[attr-defined]
    return found


def _text_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if "{" not in node.value:
            return node.value
        try:  # a str.format template: {{ for a brace, {name} for a value
            fields = {name for _, name, _, _ in string.Formatter().parse(node.value) if name}
            return node.value.format_map(
                defaultdict(lambda: _FILLER, dict.fromkeys(fields, _FILLER))
            )
        except (ValueError, KeyError, IndexError, AttributeError):
            return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            str(part.value) if isinstance(part, ast.Constant) else _FILLER for part in node.values
        )
    return None


TEST_CONFIGS = _test_configs()


def test_the_test_suites_configs_validate() -> None:
    loaded = []
    for where, text in TEST_CONFIGS:
        try:
            data, _ = parse_yaml(text, where)
        except ConfigError:
            continue
        if not isinstance(data, dict) or not _loader_accepts(text):
            continue
        loaded.append(where)
        errors = [f"{e.json_path}: {e.message}" for e in _validator().iter_errors(data)]
        assert not errors, f"{where}: " + "; ".join(errors)
    # The collection must keep finding the suite's configs (about 100 when written).
    assert len(loaded) >= 80, f"only {len(loaded)} of {len(TEST_CONFIGS)} test configs load"
