"""Which upstreams the environment's proxy variables send through a proxy, and which
proxy URLs gw refuses."""

from __future__ import annotations

import pytest

from gw.upstream_http.env_proxy import (
    ProxySettingError,
    describe_proxies,
    env_proxies,
    proxy_for,
    proxy_label,
    proxy_settings,
    public_proxies,
)

PROXY = "http://proxy.corp:3128"


def test_lower_case_names_win_and_a_bare_host_is_http() -> None:
    environ = {
        "HTTPS_PROXY": "http://upper:1",
        "https_proxy": "lower:2",
        "ALL_PROXY": "http://all:3",
        "NO_PROXY": "a.example",
        "HOME": "/root",
        "HTTP_PROXY": "  ",  # blank: not set
    }
    assert env_proxies(environ) == {
        "https": "http://lower:2",
        "all": "http://all:3",
        "no": "a.example",
    }


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.openai.com/v1/chat/completions", PROXY),
        ("http://plain.example/v1", None),  # no HTTP_PROXY and no ALL_PROXY
        ("https://127.0.0.1:8443/v1", None),  # loopback is never proxied
        ("https://127.9.9.9/v1", None),
        ("https://[::1]:8443/v1", None),
        ("https://localhost:11434/v1", None),
        ("https://ollama.localhost/v1", None),
    ],
)
def test_a_scheme_is_proxied_when_its_variable_is_set(url: str, expected: str | None) -> None:
    assert proxy_for(url, {"https": PROXY}) == expected


def test_all_proxy_covers_every_scheme_and_a_scheme_variable_wins() -> None:
    proxies = {"all": "http://all:1", "https": PROXY}
    assert proxy_for("http://plain.example/v1", proxies) == "http://all:1"
    assert proxy_for("https://api.example/v1", proxies) == PROXY


@pytest.mark.parametrize(
    ("no_proxy", "url", "bypassed"),
    [
        ("*", "https://api.openai.com/v1", True),
        ("openai.com", "https://api.openai.com/v1", True),  # a domain covers its subdomains
        (".openai.com", "https://api.openai.com/v1", True),  # a leading dot changes nothing
        ("openai.com", "https://notopenai.com/v1", False),
        ("api.openai.com:443", "https://api.openai.com/v1", True),  # the scheme's port
        ("api.openai.com:8443", "https://api.openai.com/v1", False),
        ("10.0.0.0/8", "https://10.1.2.3/v1", True),
        ("10.0.0.0/8", "https://11.1.2.3/v1", False),
        ("192.168.1.5", "https://192.168.1.5:9000/v1", True),
        ("fd00::/8", "https://[fd12::1]/v1", True),
        ("[fd12::1]:9000", "https://[fd12::1]:9000/v1", True),
        ("example.org, internal ,", "https://internal/v1", True),
        ("10.0.0.0/8", "https://ten.example/v1", False),  # a network never matches a name
        ("*.openai.com", "https://api.openai.com/v1", True),  # as Go reads it
        ("openai.com", "https://api.openai.com./v1", True),  # a trailing dot changes nothing
        ("[fd00::]/8", "https://[fd12::1]/v1", True),
        ("[fd12::1]:junk", "https://[fd12::1]/v1", False),  # a bad port matches no port
        ("api.openai.com:４４３", "https://api.openai.com/v1", False),  # not an ASCII port
        ("*:443", "https://api.openai.com/v1", False),  # * means all only alone
    ],
)
def test_no_proxy(no_proxy: str, url: str, bypassed: bool) -> None:
    expected = None if bypassed else PROXY
    assert proxy_for(url, {"https": PROXY, "no": no_proxy}) == expected


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"ALL_PROXY": "socks5://u:s3cret@h:1080"}, "ALL_PROXY must be an http:// or https://"),
        ({"https_proxy": "http://u:s3cret@h:99999"}, "https_proxy is not a URL gw can read"),
        ({"HTTP_PROXY": "http://:8080"}, "HTTP_PROXY must be an http:// or https://"),
        # An unencoded / in a password reads as host "u", port 1234: refused, unshown.
        ({"HTTPS_PROXY": "http://u:1234/s3cret@p:3128"}, "HTTPS_PROXY must be scheme://"),
        ({"HTTPS_PROXY": "http://p:3128/path"}, "with nothing after"),
    ],
)
def test_a_proxy_gw_cannot_use_is_refused_without_its_password(
    environ: dict[str, str], said: str
) -> None:
    with pytest.raises(ProxySettingError) as refused:
        proxy_settings(environ)
    assert said in str(refused.value)
    assert "s3cret" not in str(refused.value)


def test_a_https_proxy_and_no_proxy_alone_are_accepted() -> None:
    assert proxy_settings({"HTTPS_PROXY": "https://p:8443", "NO_PROXY": "*"}) == {
        "https": "https://p:8443",
        "no": "*",
    }


def test_a_proxy_label_leaves_the_credentials_out() -> None:
    assert proxy_label("http://user:s3cret@proxy.corp:3128/") == "http://proxy.corp:3128"
    assert proxy_label("http://[::1]:3128") == "http://[::1]:3128"


def test_the_proxies_are_shown_without_credentials() -> None:
    proxies = {"https": "http://u:s3cret@p:3128", "all": "http://q:1", "no": "a.example"}
    shown = public_proxies(proxies)
    assert shown == {"all": "http://q:1", "https": "http://p:3128", "no_proxy": "a.example"}
    assert describe_proxies(shown) == (
        "any scheme via http://q:1, https via http://p:3128; direct: NO_PROXY 'a.example' "
        "and loopback"
    )
    assert public_proxies({"no": "*"}) == {}
    assert describe_proxies({}) is None
