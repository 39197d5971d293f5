"""A base URL may not point a provider key at a link-local or cloud metadata address, in any
disguise; loopback and private ones load, and ``local_upstreams`` names them."""

from __future__ import annotations

import pytest

from gw.config import ConfigError, load_config
from gw.config.upstream_host import HostFormError, classify_host
from gw.config.validate import LocalUpstream, local_upstreams


def provider_config(base_url: str, *, account: bool = False) -> str:
    if account:
        return (
            "providers:\n"
            "  - name: p\n"
            "    kind: openai_compatible\n"
            "    base_url: https://api.example.com/v1\n"
            f"    accounts: [{{name: a, base_url: '{base_url}'}}]\n"
        )
    return f"providers:\n  - name: p\n    kind: openai_compatible\n    base_url: '{base_url}'\n"


@pytest.mark.parametrize(
    ("base_url", "reason"),
    [
        ("http://169.254.169.254/latest", "a cloud metadata service"),
        ("http://169.254.169.254./v1", "a cloud metadata service"),
        ("http://169.254.1.1:8080/v1", "a link-local address"),
        ("http://[fe80::1]/v1", "a link-local address"),
        ("http://[fe80::1%25eth0]/v1", "a link-local address"),
        ("http://[fd00:ec2::254]/v1", "a cloud metadata service"),
        ("http://metadata.google.internal/computeMetadata/v1", "a cloud metadata service"),
        ("http://METADATA.google.internal./v1", "a cloud metadata service"),
        ("http://100.100.100.200/latest", "a cloud metadata service"),
        ("http://[::ffff:169.254.169.254]/v1", "a cloud metadata service"),
        ("http://[::ffff:a9fe:a9fe]/v1", "a cloud metadata service"),
        ("http://[64:ff9b::a9fe:a9fe]/v1", "a cloud metadata service"),
        ("http://[::169.254.169.254]/v1", "a cloud metadata service"),
        ("http://0.0.0.0:8000/v1", "the unspecified address"),
        ("http://[::]:8000/v1", "the unspecified address"),
    ],
)
def test_link_local_and_metadata_base_urls_are_refused_with_file_field_and_reason(
    base_url: str, reason: str
) -> None:
    for account in (False, True):
        with pytest.raises(ConfigError) as caught:
            load_config(provider_config(base_url, account=account), "gw.yaml")
        error = caught.value
        field = "providers[0].accounts[0].base_url" if account else "providers[0].base_url"
        assert (error.source, error.path) == ("gw.yaml", field)
        assert error.line is not None
        assert reason in error.reason
        assert "no provider key is sent there" in error.reason
        assert str(error).startswith(f"gw.yaml:{error.line}: {field}: ")


@pytest.mark.parametrize(
    ("host", "canonical"),
    [
        ("0x7f000001", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0xa9fea9fe", "169.254.169.254"),
        ("169.254.43518", "169.254.169.254"),
        ("\uff11\uff12\uff17.0.0.1", "127.0.0.1"),  # fullwidth digits: IDNA maps them
        ("0", "0.0.0.0"),
    ],
)
def test_disguised_numeric_hosts_are_refused_naming_the_canonical_form(
    host: str, canonical: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(provider_config(f"http://{host}:8000/v1"), "gw.yaml")
    assert caught.value.path == "providers[0].base_url"
    assert "non-canonical form" in caught.value.reason
    assert caught.value.reason.endswith(f"write it as {canonical}")


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:11434/v1",
        "http://localhost:11434/v1",
        "http://[::1]:8000/v1",
        "http://[::ffff:127.0.0.1]:8000/v1",
        "http://10.0.0.5:8000/v1",
        "http://192.168.1.20/v1",
        "http://100.101.102.103:8000/v1",  # a Tailscale node
        "https://api.openai.com/v1",
        "https://123.example.com/v1",  # numeric labels in a name are not an address
    ],
)
def test_loopback_private_and_public_base_urls_load(base_url: str) -> None:
    config = load_config(provider_config(base_url), "gw.yaml")
    assert config.providers[0].base_url == base_url


def test_local_upstreams_names_loopback_and_private_providers() -> None:
    config = load_config(
        "providers:\n"
        "  - {name: ollama, kind: openai_compatible, base_url: 'http://localhost:11434/v1'}\n"
        "  - {name: lan, kind: openai_compatible, base_url: 'http://10.1.2.3/v1',\n"
        "     accounts: [{name: b, base_url: 'http://[::ffff:127.0.0.1]:9/v1'}]}\n"
        "  - {name: cloud, kind: openai_compatible, base_url: 'https://api.example.com/v1'}\n"
        "  - {name: mock, kind: mock}\n",
        "gw.yaml",
    )
    assert local_upstreams(config) == [
        LocalUpstream(provider="ollama", host="localhost", kind="loopback"),
        LocalUpstream(provider="lan", host="10.1.2.3", kind="private"),
        LocalUpstream(provider="lan", host="::ffff:127.0.0.1", kind="loopback"),
    ]


def test_classify_host_reads_names_and_addresses() -> None:
    assert classify_host("api.openai.com") == "public"
    assert classify_host("gw.localhost") == "loopback"
    assert classify_host("[::1]".strip("[]")) == "loopback"
    with pytest.raises(HostFormError):
        classify_host("\udcff")  # not encodable: not a host at all
