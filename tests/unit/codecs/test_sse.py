"""The SSE framer: spec cases, and the same events whatever the chunk boundaries."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gw.codecs import sse
from gw.codecs.sse import SSEMessage, SSEParser, encode_sse
from gw.errors import UpstreamError


def parse_all(chunks: list[bytes]) -> list[SSEMessage]:
    parser = SSEParser()
    messages: list[SSEMessage] = []
    for chunk in chunks:
        messages.extend(parser.feed(chunk))
    messages.extend(parser.close())
    return messages


SAMPLE = (
    "\ufeff: comment line\r\n"
    "event: greeting\r\n"
    "data: héllo 🌍\r\n"
    "data: second line\r\n"
    "id: 7\r\n"
    "retry: 1000\r\n"
    "\r\n"
    "data:no space\n\n"
    "data: cr only\r\r"
    "event: ping\n\n"  # no data: not dispatched
    "data\n\n"  # a field name alone is an empty value
    "unknown: field\ndata:  two spaces\n\n"
    "data: trailing, never terminated"
).encode()

EXPECTED = [
    SSEMessage(event="greeting", data="héllo 🌍\nsecond line", id="7"),
    SSEMessage(data="no space", id="7"),
    SSEMessage(data="cr only", id="7"),
    SSEMessage(data="", id="7"),
    SSEMessage(data=" two spaces", id="7"),
]


def test_spec_cases_in_one_chunk() -> None:
    assert parse_all([SAMPLE]) == EXPECTED


@pytest.mark.parametrize("cut", range(len(SAMPLE) + 1))
def test_every_single_split_position(cut: int) -> None:
    assert parse_all([SAMPLE[:cut], SAMPLE[cut:]]) == EXPECTED


def test_byte_at_a_time() -> None:
    assert parse_all([SAMPLE[i : i + 1] for i in range(len(SAMPLE))]) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(SAMPLE)), max_size=12))
def test_arbitrary_splits_yield_the_same_messages(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(SAMPLE)]
    chunks = [SAMPLE[a:b] for a, b in itertools.pairwise(bounds)]
    assert parse_all(chunks) == EXPECTED


@given(
    st.lists(
        st.tuples(st.none() | st.sampled_from(["a", "b-c"]), st.text(max_size=30)),
        max_size=6,
    ),
    st.data(),
)
def test_encode_then_parse_round_trips(
    events: list[tuple[str | None, str]], data: st.DataObject
) -> None:
    stream = b"".join(encode_sse(text, event) for event, text in events)
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(stream)), max_size=8))
    bounds = [0, *sorted(cuts), len(stream)]
    parsed = parse_all([stream[a:b] for a, b in itertools.pairwise(bounds)])
    # Line breaks of any kind inside data come back as "\n", which is what SSE can carry.
    expected = [
        SSEMessage(event=event, data=text.replace("\r\n", "\n").replace("\r", "\n"))
        for event, text in events
    ]
    assert parsed == expected


def test_crlf_split_between_cr_and_lf_is_one_line_end() -> None:
    assert parse_all([b"data: a\r", b"\n\r", b"\n"]) == [SSEMessage(data="a")]


def test_trailing_event_without_blank_line_is_discarded() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: complete\n\ndata: partial\n") == [SSEMessage(data="complete")]
    assert parser.close() == []


def test_id_persists_until_replaced_and_null_ids_are_ignored() -> None:
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid: x\x00y\ndata: c\n\nid\ndata: d\n\n"
    assert [m.id for m in parse_all([stream])] == ["1", "1", "1", ""]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert parse_all([b"data: \xff\n\n"]) == [SSEMessage(data="\ufffd")]


def test_encode_sse_shapes() -> None:
    assert encode_sse('{"a":1}') == b'data: {"a":1}\n\n'
    assert encode_sse(b"x\ny", event="e") == b"event: e\ndata: x\ndata: y\n\n"
    assert encode_sse("") == b"data: \n\n"
    with pytest.raises(ValueError, match="line break"):
        encode_sse("x", event="a\nb")


def test_a_long_line_in_many_pieces_is_joined_once() -> None:
    parser = SSEParser()
    piece = b"x" * 1000
    assert parser.feed(b"data: ") == []
    for _ in range(500):
        assert parser.feed(piece) == []
    (message,) = parser.feed(b"\n\n")
    assert message.data == "x" * 500_000


def test_an_event_beyond_the_limit_is_an_upstream_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 100)
    parser = SSEParser()
    assert parser.feed(b"data: " + b"a" * 50 + b"\n") == []  # one data line, event open
    with pytest.raises(UpstreamError):
        parser.feed(b"data: " + b"b" * 60)
    fresh = SSEParser()
    assert fresh.feed(b"data: " + b"c" * 80 + b"\n\n") == [SSEMessage(data="c" * 80)]
