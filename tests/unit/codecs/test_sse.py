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


# feed_data has a fast path for chunks of whole ``data:`` events; the cases below are run
# through it and checked against feed, which always takes the general path.

FRAGMENTS = [
    b'data: {"a":1}\n\n',
    b"data:no space\n\n",
    b"data:\n\n",
    b"data:  two spaces\n\n",
    b"data: \xff\n\n",
    b"data: one\ndata: two\n\n",
    b"event: e\ndata: named\n\n",
    b"event: e\n",
    b"id: 3\n\n",
    b": comment\n\n",
    b"data: crlf\r\n\r\n",
    b"data: cr\r\r",
    b"data: open\n",
    b"data: partial",
    b"\r",
    b"\n",
    b"\n\n",
    b"retry: 5\n",
    b"data\n\n",
]


def data_of_all(chunks: list[bytes]) -> list[bytes]:
    parser = SSEParser()
    payloads: list[bytes] = []
    for chunk in chunks:
        payloads.extend(parser.feed_data(chunk))
    parser.close()
    return payloads


def expected_data(chunks: list[bytes]) -> list[str]:
    return [message.data for message in parse_all(chunks)]


def decoded(payloads: list[bytes]) -> list[str]:
    return [payload.decode("utf-8", "replace") for payload in payloads]


@given(
    st.lists(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3), max_size=10),
    st.data(),
)
def test_feed_data_gives_the_data_feed_gives(
    groups: list[list[bytes]], data: st.DataObject
) -> None:
    # Chunks mostly on event boundaries, as upstreams send them, so the fast path runs.
    chunks = [b"".join(group) for group in groups]
    if chunks and data.draw(st.booleans()):  # and sometimes one more cut, anywhere
        index = data.draw(st.integers(0, len(chunks) - 1))
        cut = data.draw(st.integers(0, len(chunks[index])))
        chunks[index : index + 1] = [chunks[index][:cut], chunks[index][cut:]]
    assert decoded(data_of_all(chunks)) == expected_data(chunks)


def test_feed_data_on_the_sample_at_every_split_position() -> None:
    for cut in range(len(SAMPLE) + 1):
        chunks = [SAMPLE[:cut], SAMPLE[cut:]]
        assert decoded(data_of_all(chunks)) == [message.data for message in EXPECTED]


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([b"data: a\n\n", b"data: b\n\n"], [b"a", b"b"]),
        ([b"data: a\n\n", b"data: b\n\ndata:c\n\ndata:\n\n"], [b"a", b"b", b"c", b""]),
        ([b"data: a\n\n", b"data: b", b"c\n\n", b"data: d\n\n"], [b"a", b"bc", b"d"]),
        ([b"data: a\n\n", b"data: b\n", b"\ndata: c\n\n"], [b"a", b"b", b"c"]),
        ([b"data: a\n\n", b"data: ", b"data: b\n\n"], [b"a", b"data: b"]),
        ([b"data: a\n\n", b"data: x\n", b"data: y\n\n"], [b"a", b"x\ny"]),
        ([b"data: a\n\n", b"data: b\n\n\n", b"data: c\n\n"], [b"a", b"b", b"c"]),
        ([b"data: a\n\n", b"data: b\r\n\r\n", b"data: c\r\n", b"\r\n"], [b"a", b"b", b"c"]),
        ([b"data: a\r\r", b"\ndata: b\n\n", b"data: c\n\n"], [b"a", b"b", b"c"]),
        ([b"data: a\n\n", b"data: b\r\n\n", b"data: c\rdata: d\n\n"], [b"a", b"b", b"c\nd"]),
        ([b"data: a\n\n", b"data: b\ndata: c\n\n", b"data: d\n\n"], [b"a", b"b\nc", b"d"]),
        (
            [b"data: a\n\n", b": ping\n\n", b"data: b\n\nid: 1\n\n", b"data: c\n\n"],
            [b"a", b"b", b"c"],
        ),
        ([b"\xef\xbb\xbfdata: a\n\n", b"data: b\n\n"], [b"a", b"b"]),
        ([b"data: a\n\n", b"\xef\xbb\xbfdata: b\n\n"], [b"a"]),  # a BOM only counts at the start
        ([b"data: a\n\n", b"data: \xe2\x82", b"\xac\n\n"], [b"a", "€".encode()]),
    ],
    ids=[
        "one event a chunk",
        "several events in one chunk",
        "an event split over chunks",
        "split inside the blank line",
        "a line without its end pending",
        "data lines pending",
        "an extra blank line",
        "crlf line ends",
        "cr, then its lf in the next chunk",
        "cr inside a chunk ending in lf",
        "two data lines",
        "comments and ids between",
        "bom",
        "bom later",
        "utf-8 split",
    ],
)
def test_feed_data_cases(chunks: list[bytes], expected: list[bytes]) -> None:
    assert data_of_all(chunks) == expected
    assert decoded(expected) == expected_data(chunks)


def test_feed_data_takes_the_fast_path_for_whole_data_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parser = SSEParser()
    assert parser.feed_data(b"data: first\n\n") == [b"first"]  # the start: general path
    general: list[bytes] = []
    parse = parser._parse
    monkeypatch.setattr(parser, "_parse", lambda data: general.append(data) or parse(data))
    assert parser.feed_data(b"data: a\n\n") == [b"a"]
    assert parser.feed_data(b"data: b\n\ndata:c\n\n") == [b"b", b"c"]
    assert general == []
    assert parser.feed_data(b"event: e\ndata: d\n\n") == [b"d"]
    assert general == [b"event: e\ndata: d\n\n"]


def test_feed_data_keeps_the_event_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 100)
    parser = SSEParser()
    assert parser.feed_data(b"data: a\n\n") == [b"a"]
    with pytest.raises(UpstreamError):
        parser.feed_data(b"data: " + b"b" * 100 + b"\n\n")


def test_feed_and_feed_data_may_be_mixed() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\n\n") == [SSEMessage(data="a")]
    assert parser.feed_data(b"event: e\n") == []
    assert parser.feed_data(b"data: b\n\n") == [b"b"]  # ends the event named e
    assert parser.feed(b"id: 1\ndata: c\n\n") == [SSEMessage(data="c", id="1")]
    assert parser.feed_data(b"data: d\n\n") == [b"d"]
    assert parser.feed(b"data: e\n\n") == [SSEMessage(data="e", id="1")]
