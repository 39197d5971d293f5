"""``telemetry.otlp.headers``: a header that carries a credential must be an ``env:NAME`` or
``vault:NAME`` reference (a literal would be stored with every config revision and in
backups); other headers may be literal."""

from __future__ import annotations

import pytest

from gw.config import ConfigError, load_config

SECRET = "hcaik_01literal0secret0value"


def otlp(headers: str) -> str:
    return (
        "telemetry:\n"
        "  otlp:\n"
        "    enabled: true\n"
        "    endpoint: https://api.honeycomb.io\n"
        f"    headers: {headers}\n"
    )


@pytest.mark.parametrize(
    "name",
    [
        "authorization",
        "Authorization",
        "Proxy-Authorization",
        "x-api-key",
        "API-Key",
        "x-honeycomb-team",
        "X-Collector-Token",
        "x-scope-key",
        "x-client-secret",
    ],
)
def test_a_literal_credential_header_is_refused(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(otlp(f"{{{name}: {SECRET}}}"), "gw.yaml")
    error = caught.value
    assert error.path == f"telemetry.otlp.headers.{name}"
    assert error.line == 5
    assert "env:NAME or vault:NAME" in error.reason
    assert SECRET not in str(error)


@pytest.mark.parametrize("reference", ["env:HONEYCOMB_KEY", "vault:honeycomb"])
def test_a_credential_header_may_be_a_reference(reference: str) -> None:
    config = load_config(otlp(f"{{x-honeycomb-team: '{reference}'}}"), "gw.yaml")
    assert config.telemetry.otlp.headers == {"x-honeycomb-team": reference}


def test_other_headers_may_be_literal() -> None:
    headers = "{x-honeycomb-dataset: gw, X-Scope-OrgID: tenant-1}"
    config = load_config(otlp(headers), "gw.yaml")
    assert config.telemetry.otlp.headers == {
        "x-honeycomb-dataset": "gw",
        "X-Scope-OrgID": "tenant-1",
    }


@pytest.mark.parametrize("reference", ["env:", "vault:"])
def test_a_reference_without_a_name_is_refused(reference: str) -> None:
    with pytest.raises(ConfigError, match=r"telemetry\.otlp\.headers\.x-dataset"):
        load_config(otlp(f"{{x-dataset: '{reference}'}}"), "gw.yaml")


def test_a_literal_credential_is_refused_with_export_off_too() -> None:
    text = f"telemetry:\n  otlp: {{headers: {{authorization: 'Bearer {SECRET}'}}}}\n"
    with pytest.raises(ConfigError, match="env:NAME or vault:NAME"):
        load_config(text, "gw.yaml")
