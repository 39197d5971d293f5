"""Bad input gets a 400-class answer in OpenAI's shape, with gw's headers, and is traced."""

from __future__ import annotations

import json
import socket
import uuid
from typing import Any

import httpx
import openai
import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI


def post(gw: GwServer, content: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    with gw.client() as http:
        return http.post(
            "/v1/chat/completions",
            content=content,
            headers={"content-type": "application/json", **(headers or {})},
        )


def assert_gw_error(answer: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    assert set(body["error"]) >= {"message", "type", "code", "param"}
    assert body["gw"]["request_id"] == answer.headers["x-gw-request-id"]
    assert "x-gw-route" in answer.headers
    assert answer.headers["x-gw-revision"].isdigit()
    return body


def test_malformed_json(gw: GwServer) -> None:
    assert_gw_error(post(gw, b'{"model": "mock", "messages": ['), 400, "invalid_request")


@pytest.mark.parametrize(
    ("payload", "param"),
    [
        (
            b'{"model": "mock", "messages": [{"role": "wizard", "content": "x"}]}',
            "messages[0].role",
        ),
        (
            b'{"model": "mock", "messages": [{"role": "user", "content": "x"}], "max_tokens": "9"}',
            "max_tokens",
        ),
        (b'{"model": 7, "messages": [{"role": "user", "content": "x"}]}', "model"),
        (b'{"messages": [{"role": "user", "content": "x"}]}', "model"),
        (
            b'{"model": "mock", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}',
            "temperature",
        ),
    ],
)
def test_wrong_fields_are_named(gw: GwServer, payload: bytes, param: str) -> None:
    body = assert_gw_error(post(gw, payload), 400, "invalid_request")
    assert body["error"]["param"] == param
    assert param.split("[", maxsplit=1)[0] in body["error"]["message"]


def test_unknown_model_is_404_and_lists_nothing_secret(gw: GwServer) -> None:
    answer = post(gw, b'{"model": "nope", "messages": [{"role": "user", "content": "x"}]}')
    body = assert_gw_error(answer, 404, "model_not_found")
    assert answer.headers["x-gw-route"] == "-"
    assert "nope" in body["error"]["message"]


def test_provider_slash_model_addresses_a_target_directly(gw: GwServer) -> None:
    answer = post(gw, b'{"model": "mock/anything", "messages": [{"role": "user", "content": "x"}]}')
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == "mock/anything"
    trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    assert trace["decision"]["direct"] is True


@pytest.mark.parametrize(
    ("model", "route"),
    [
        ("mock/x\r\nSet-Cookie: a=b", "mock/x%0D%0ASet-Cookie: a=b"),
        ("mock/x\u0001", "mock/x%01"),
        ("mock/caf\u00e9\u202e", "mock/caf%C3%A9%E2%80%AE"),
        ("mock/" + "m" * 300, "mock/" + "m" * 251),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_any_model_text_gives_a_well_formed_route_header(
    gw: GwServer, model: str, route: str, stream: bool
) -> None:
    """The model of ``provider/model`` is the client's text, and goes into x-gw-route."""
    payload = {"model": model, "messages": [{"role": "user", "content": "x"}], "stream": stream}
    answer = post(gw, json.dumps(payload).encode())
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == route
    assert "set-cookie" not in answer.headers


def test_oversized_body_is_413(gw: GwServer) -> None:
    filler = b"x" * (9 * 1024 * 1024)
    payload = b'{"model": "mock", "messages": [{"role": "user", "content": "' + filler + b'"}]}'
    assert_gw_error(post(gw, payload), 413, "request_too_large")


def test_sdk_raises_typed_errors(gw: GwServer) -> None:
    client = openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
    assert caught.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model="mock", messages=[{"role": "wizard", "content": "x"}])  # type: ignore[misc, list-item]
    assert bad.value.code == "invalid_request"


def test_bad_requests_are_traced_with_their_error(gw: GwServer) -> None:
    answer = post(gw, b"not json", headers={"x-request-id": "client-tag-42"})
    trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    assert trace["status"] == 400
    assert trace["error"]["code"] == "invalid_request"
    assert trace["client_request_id"] == "client-tag-42"
    listed = gw.cli_json("traces", "--client-request-id", "client-tag-42")
    assert [t["request_id"] for t in listed] == [answer.headers["x-gw-request-id"]]


def test_unknown_endpoint_has_headers_too_and_lists_what_gw_serves(gw: GwServer) -> None:
    with gw.client() as http:
        answer = http.get("/v1/nothing-here")
        long = http.post("/v1/" + "x" * 5000)
    assert_gw_error(answer, 404, "endpoint_not_found")
    message = answer.json()["error"]["message"]
    assert message.startswith("no such endpoint: /v1/nothing-here; gw serves POST ")
    for served in ("/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1beta"):
        assert served in message
    assert_gw_error(long, 404, "endpoint_not_found")
    assert len(long.json()["error"]["message"]) < 1000  # the client's path is shown cut


def test_a_long_client_request_id_is_found_by_the_id_the_client_sent(gw: GwServer) -> None:
    sent = "client-" + "x" * 300
    with gw.client() as http:
        answer = http.post("/v1/chat/completions", content=b"{", headers={"x-request-id": sent})
    request_id = answer.headers["x-gw-request-id"]
    trace = gw.wait_for_trace(request_id)
    assert trace["client_request_id"] == sent[:128]  # kept: the first 128 characters
    found = gw.cli_json("traces", "--client-request-id", sent)
    assert [t["request_id"] for t in found] == [request_id]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/models", "/v1/messages"])
def test_options_has_the_gw_headers_too(gw: GwServer, path: str) -> None:
    with gw.client() as http:
        answer = http.options(path)
    assert answer.status_code == 204
    assert answer.headers["x-gw-request-id"].startswith("req_")
    assert answer.headers["x-gw-route"] == "-"
    assert int(answer.headers["x-gw-revision"]) >= 1
    assert answer.headers.get_list("x-gw-request-id") == [answer.headers["x-gw-request-id"]]


def test_a_client_that_hangs_up_before_the_answer_is_traced_and_cancelled(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    """The upstream would answer after 60 s; the client hangs up once it has the request."""
    primary.enqueue(Behavior(delay_before_headers=60.0))
    payload = {"model": "solo", "messages": [{"role": "user", "content": "x"}]}
    tag = f"hang-up-{uuid.uuid4().hex}"
    with socket.create_connection(("127.0.0.1", gw.port)) as raw:
        raw.sendall(http_post("/v1/chat/completions", json.dumps(payload).encode(), tag))
        wait_until(lambda: primary.requests, "the upstream to receive the call")
    [trace] = wait_until(
        lambda: gw.cli_json("traces", "--client-request-id", tag), "the hung-up request's trace"
    )
    assert trace["status"] == 499
    assert trace["error_code"] == "client_aborted"
    explained = gw.wait_for_trace(trace["request_id"])
    assert [a["outcome"] for a in explained["attempts"]] == ["aborted"]
    assert explained["attempts"][0]["latency_ms"] < 60_000  # cancelled, not waited out


def test_a_body_that_never_finishes_gets_408(gw: GwServer) -> None:
    with socket.create_connection(("127.0.0.1", gw.port), timeout=20) as raw:
        head = http_post("/v1/chat/completions", b"x" * 100).split(b"\r\n\r\n")[0]
        raw.sendall(head + b"\r\n\r\n" + b'{"model": "mo')  # then silence
        answer = read_http_response(raw)
    assert answer.startswith("HTTP/1.1 408")
    assert '"code":"request_timeout"' in answer.replace(" ", "")
    assert "x-gw-request-id" in answer


def read_http_response(raw: socket.socket) -> str:
    """One whole response: the head, then content-length bytes (they may come in pieces)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += _recv_some(raw)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += _recv_some(raw)
    return (head + b"\r\n\r\n" + body).decode()


def _recv_some(raw: socket.socket) -> bytes:
    chunk = raw.recv(65536)  # bounded by the socket's timeout
    if not chunk:
        raise AssertionError("the server closed the connection mid-response")
    return chunk


def http_post(path: str, body: bytes, client_request_id: str | None = None) -> bytes:
    tagged = f"x-request-id: {client_request_id}\r\n" if client_request_id else ""
    head = (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"{tagged}content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def test_head_is_answered_wherever_get_is_but_never_acts(gw: GwServer) -> None:
    with gw.client() as http:
        for path in ("/", "/v1/models", "/livez", "/readyz", "/openapi.json"):
            got, head = http.get(path), http.head(path)
            assert (head.status_code, head.content) == (got.status_code, b""), path
            assert head.headers["content-type"] == got.headers["content-type"], path
        # GETs that act (a login link redeemed once, a background answer handed out once)
        # are not run for a HEAD: it stays refused.
        for path in ("/dashboard/login?token=x", "/dashboard/logout", "/v1/responses/resp_x"):
            assert http.head(path).status_code == 405, path


def test_numbers_given_as_text_that_are_not_ascii_digits_are_a_400(gw: GwServer) -> None:
    with gw.client() as http:
        answers = [
            http.get("/v1beta/models", params={"pageSize": "²"}),
            http.get("/v1/responses/resp_x/input_items", params={"limit": "²"}),
            http.post(
                "/v1beta/models/mock:generateContent",
                json={
                    "contents": [{"parts": [{"text": "hi"}]}],
                    "generationConfig": {"maxOutputTokens": "²"},
                },
            ),
        ]
    assert [answer.status_code for answer in answers] == [400, 400, 400]
