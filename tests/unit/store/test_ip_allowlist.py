"""An API key's IP allowlist: what ``--allow-ip`` accepts, how it is stored, what it admits."""

from __future__ import annotations

import pytest

from gw.store.ip_allowlist import allows, client_address, networks_of, parse_allowlist


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("10.0.0.0/8", "10.0.0.0/8"),
        ("127.0.0.1", "127.0.0.1/32"),  # a bare address is that one address
        (" 192.168.1.0/24 ", "192.168.1.0/24"),
        ("10.0.0.0/255.0.0.0", "10.0.0.0/8"),
        ("2001:db8::/32", "2001:db8::/32"),
        ("2001:DB8:0:0::1", "2001:db8::1/128"),
        ("::1", "::1/128"),
        ("::ffff:10.0.0.0/104", "10.0.0.0/8"),  # IPv4-mapped: kept in IPv4 form
        ("::ffff:203.0.113.7", "203.0.113.7/32"),
        ("0.0.0.0/0", "0.0.0.0/0"),
    ],
)
def test_entries_are_stored_in_normal_form(text: str, stored: str) -> None:
    assert parse_allowlist([text]) == (stored,)


def test_duplicates_are_dropped_in_order() -> None:
    assert parse_allowlist(["10.0.0.1", "::1", "10.0.0.1/32", "::ffff:10.0.0.1"]) == (
        "10.0.0.1/32",
        "::1/128",
    )


@pytest.mark.parametrize(
    "text",
    ["10.0.0.256", "10.0.0.0/33", "2001:db8::/129", "example.com", "", "10.0.0.0/8/8",
     "fe80::1%eth0", "10.0.0.0 /8", "1.2.3"],
)  # fmt: skip
def test_a_bad_value_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="is not an IP address or CIDR network") as refused:
        parse_allowlist(["10.0.0.0/8", text])
    assert repr(text) in str(refused.value)


def test_host_bits_are_refused_saying_what_to_write() -> None:
    with pytest.raises(ValueError, match=r"has host bits set") as v4:
        parse_allowlist(["10.1.2.3/8"])
    assert "'10.1.2.3/8'" in str(v4.value)
    assert "10.0.0.0/8 for the whole network" in str(v4.value)
    assert "10.1.2.3 for that one address" in str(v4.value)
    with pytest.raises(ValueError, match=r"2001:db8::/32 for the whole network"):
        parse_allowlist(["2001:db8::1/32"])


def test_an_empty_list_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        parse_allowlist([])


@pytest.mark.parametrize(
    ("allowed", "host", "expected"),
    [
        (["10.0.0.0/8"], "10.20.30.40", True),
        (["10.0.0.0/8"], "11.0.0.1", False),
        (["10.0.0.0/8"], "127.0.0.1", False),
        (["127.0.0.1"], "127.0.0.1", True),
        (["127.0.0.1"], "127.0.0.2", False),
        (["10.0.0.0/8", "192.168.0.0/16"], "192.168.4.4", True),
        (["2001:db8::/32"], "2001:db8:1::7", True),
        (["2001:db8::/32"], "2001:db9::7", False),
        (["::1"], "::1", True),
        (["::1"], "127.0.0.1", False),  # loopback in one family is not the other
        (["127.0.0.1"], "::1", False),
        # A dual-stack socket reports an IPv4 client as IPv4-mapped IPv6.
        (["10.0.0.0/8"], "::ffff:10.1.2.3", True),
        (["10.0.0.0/8"], "::ffff:11.1.2.3", False),
        (["::ffff:10.0.0.0/104"], "10.9.9.9", True),
        (["0.0.0.0/0"], "203.0.113.7", True),
        (["0.0.0.0/0"], "2001:db8::1", False),
        (["fe80::/10"], "fe80::1%eth0", True),  # the client's zone id does not matter
        # No address (a Unix socket, a test transport): an allowlist fails closed.
        (["0.0.0.0/0", "::/0"], None, False),
        (["0.0.0.0/0", "::/0"], "testclient", False),
    ],
)
def test_a_client_is_allowed_only_inside_a_network(
    allowed: list[str], host: str | None, expected: bool
) -> None:
    assert allows(networks_of(parse_allowlist(allowed)), host) is expected


def test_client_addresses_are_read_in_ipv4_form_when_mapped() -> None:
    assert str(client_address("::ffff:127.0.0.1")) == "127.0.0.1"
    assert str(client_address("2001:db8::1")) == "2001:db8::1"
    assert client_address("not-an-ip") is None
    assert client_address(None) is None


def test_a_stored_entry_that_is_not_a_network_raises() -> None:
    with pytest.raises(ValueError, match="'nonsense'"):
        networks_of(("10.0.0.0/8", "nonsense"))
