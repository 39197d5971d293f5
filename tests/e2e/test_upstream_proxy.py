"""Upstreams behind the environment's proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY):
a real gw, the openai SDK, a fake forward proxy, and an upstream named by a host only the
proxy can reach (``upstream.test``), so a request that skipped the proxy would fail. An
https upstream is reached through a CONNECT tunnel, its certificate signed by a CA made
here and trusted through the provider's ``tls.ca_file``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from e2e.gw_process import GwServer, run_cli
from fakes.forward_proxy import FakeForwardProxy
from fakes.openai_upstream import DEFAULT_TEXT, FakeOpenAI
from fakes.tls_certs import CertAuthority, make_ca

CONFIG = """
server: {{upstream_transport: {transport}}}
providers:
  - {{name: remote, kind: openai_compatible, base_url: "http://upstream.test/v1"}}
  - {{name: local, kind: openai_compatible, base_url: "{local}"}}
routes:
  - {{name: remote, targets: [{{provider: remote, model: gpt-r}}]}}
  - {{name: local, targets: [{{provider: local, model: gpt-l}}]}}
"""
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def proxy(upstream: FakeOpenAI) -> Iterator[FakeForwardProxy]:
    with FakeForwardProxy(upstream.base_url.removesuffix("/v1")) as fake:
        yield fake


def start_gw(tmp: Path, transport: str, upstream: FakeOpenAI, env: dict[str, str]) -> GwServer:
    config = tmp / "gw.yaml"
    config.write_text(CONFIG.format(transport=transport, local=upstream.base_url))
    return GwServer(tmp / "state", config, env=env)  # started by `with`


@pytest.mark.parametrize("transport", ["builtin", "httpx"])
def test_a_proxied_upstream_is_reached_through_the_proxy_whole_and_streamed(
    tmp_path: Path, transport: str, upstream: FakeOpenAI, proxy: FakeForwardProxy
) -> None:
    proxy_url = proxy.url.replace("http://", "http://gw:s3cret@")
    with start_gw(tmp_path, transport, upstream, {"HTTP_PROXY": proxy_url}) as gw:
        client = openai.OpenAI(base_url=gw.base_url, api_key="unused", max_retries=0)
        seen = len(proxy.seen)
        whole = client.chat.completions.create(model="remote", messages=HI)
        assert whole.choices[0].message.content == DEFAULT_TEXT
        stream = client.chat.completions.create(model="remote", messages=HI, stream=True)
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        assert text == DEFAULT_TEXT
        through = proxy.seen[seen:]
        assert [(r.method, r.target) for r in through] == [
            ("POST", "http://upstream.test/v1/chat/completions")
        ] * 2
        assert {r.proxy_authorization for r in through} == {"Basic Z3c6czNjcmV0"}  # gw:s3cret

        # A loopback upstream is reached directly, as NO_PROXY would say for any other.
        local = client.chat.completions.create(model="local", messages=HI)
        assert local.choices[0].message.content == DEFAULT_TEXT
        assert len(proxy.seen) == seen + 2
        assert f"http via {proxy.url}; direct: loopback" in gw.log()
        assert "s3cret" not in gw.log()


def test_no_proxy_sends_a_host_directly(
    tmp_path: Path, upstream: FakeOpenAI, proxy: FakeForwardProxy
) -> None:
    env = {"HTTP_PROXY": proxy.url, "NO_PROXY": "example.org,.test"}
    with start_gw(tmp_path, "builtin", upstream, env) as gw:
        client = openai.OpenAI(base_url=gw.base_url, api_key="unused", max_retries=0)
        seen = len(proxy.seen)
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(model="remote", messages=HI)
        # Directly, upstream.test does not resolve (or, with a slow resolver, times out).
        assert refused.value.status_code in (502, 504)
        assert len(proxy.seen) == seen
        status = gw.cli_json("status")
        assert status["upstream_proxies"] == {"http": proxy.url, "no_proxy": "example.org,.test"}
        shown = gw.cli("status").stdout
        assert f"proxy    http via {proxy.url}; direct: NO_PROXY 'example.org,.test'" in shown
        assert f"admin    token in {gw.state_dir / 'admin-token'}" in shown


def test_a_socks_proxy_is_refused_at_start_without_showing_its_password(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text("providers: [{name: mock, kind: mock}]\n")
    done = run_cli(
        "serve", "--config", str(config), "--state-dir", str(tmp_path / "s"), "--port", "0",
        env={"ALL_PROXY": "socks5://gw:s3cret@127.0.0.1:1080"}, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    said = " ".join(done.stderr.split())
    assert "ALL_PROXY must be an http:// or https:// proxy URL" in said
    assert "s3cret" not in done.stderr + done.stdout


TLS_CONFIG = """
providers:
  - name: secure
    kind: openai_compatible
    base_url: "https://upstream.test/v1"
    tls: {{ca_file: "{ca_file}"}}
  - {{name: untrusted, kind: openai_compatible, base_url: "https://upstream.test/v1"}}
routes:
  - {{name: secure, targets: [{{provider: secure, model: gpt-s}}]}}
  - {{name: untrusted, targets: [{{provider: untrusted, model: gpt-u}}]}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
"""


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> CertAuthority:
    return make_ca(tmp_path_factory.mktemp("ca"), names=("upstream.test",))


@pytest.fixture(scope="module")
def tls_upstream(authority: CertAuthority) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(tls=authority.server_context()) as fake:
        yield fake


@pytest.mark.parametrize("transport", ["builtin", "httpx"])
def test_an_https_upstream_is_reached_through_a_connect_tunnel_whole_and_streamed(
    tmp_path: Path, transport: str, authority: CertAuthority, tls_upstream: FakeOpenAI
) -> None:
    config = tmp_path / "gw.yaml"
    text = TLS_CONFIG.format(ca_file=authority.ca_file)
    config.write_text(
        text.replace("providers:", f"server: {{upstream_transport: {transport}}}\nproviders:", 1)
    )
    tunnel = FakeForwardProxy("http://127.0.0.1:9", tunnel_to=("127.0.0.1", tls_upstream.port))
    with (
        tunnel,
        GwServer(
            tmp_path / "state",
            config,
            env={"HTTPS_PROXY": tunnel.url.replace("http://", "http://gw:s3cret@")},
        ) as gw,
    ):
        client = openai.OpenAI(base_url=gw.base_url, api_key="unused", max_retries=0)
        answered = len(tls_upstream.requests)
        whole = client.chat.completions.create(model="secure", messages=HI)
        assert whole.choices[0].message.content == DEFAULT_TEXT
        stream = client.chat.completions.create(model="secure", messages=HI, stream=True)
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        assert text == DEFAULT_TEXT
        assert [r.path for r in tls_upstream.requests[answered:]] == ["/v1/chat/completions"] * 2
        # Only tunnels went through the proxy: it never saw a request in the clear.
        assert tunnel.seen
        assert {(r.method, r.target) for r in tunnel.seen} == {("CONNECT", "upstream.test:443")}
        assert {r.proxy_authorization for r in tunnel.seen} == {"Basic Z3c6czNjcmV0"}

        # The same upstream without the provider's CA file: refused, naming why.
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(model="untrusted", messages=HI)
        assert refused.value.status_code == 502
        assert "TLS certificate not trusted" in str(refused.value.body)
        assert len(tls_upstream.requests) == answered + 2
        assert "s3cret" not in gw.log()
