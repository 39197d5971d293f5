"""gw.store.state_migrate without a database: the column plan, the value fit, the
checksum's canonical form and the endpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from gw.store.migrations import StoreError
from gw.store.state_migrate import Endpoint, parse_endpoint
from gw.store.state_migrate.checksum import TableChecksum, encode_value
from gw.store.state_migrate.tables import Kind, TableShape, fit, plan_tables


def shape(name: str, **columns: Kind) -> TableShape:
    return TableShape(name=name, columns=columns)


def test_columns_both_sides_have_are_copied_by_name_local_ones_never() -> None:
    source = {
        "traces": shape("traces", request_id="text", seq="integer", body="text", gateway="text"),
        "usage_rollup": shape("usage_rollup", period="text"),
        "usage": shape("usage", request_id="text"),
        "schema_version": shape("schema_version", version="integer"),
        "gateways": shape("gateways", id="text"),  # a PostgreSQL fleet's registry
    }
    destination = {
        "traces": shape("traces", body="blob", request_id="text", gateway="text", extra="real"),
        "usage": shape("usage", request_id="text"),
        "usage_rollup": shape("usage_rollup", period="text"),
    }
    plans = plan_tables(source, destination)
    assert [p.name for p in plans] == ["traces", "usage", "usage_rollup"]  # derived last
    assert plans[0].columns == ("body", "gateway", "request_id")
    assert plans[0].kinds == ("blob", "text", "text")


def test_a_source_column_the_destination_lacks_stops_the_migration() -> None:
    source = {"usage": shape("usage", request_id="text", gateway="text"), "new": shape("new")}
    destination = {"usage": shape("usage", request_id="text")}
    with pytest.raises(StoreError, match=r"table new, column usage\.gateway"):
        plan_tables(source, destination)


@pytest.mark.parametrize(
    ("value", "kind", "fitted"),
    [
        (b'{"a":1}', "text", '{"a":1}'),
        ('{"a":1}', "blob", b'{"a":1}'),
        (1, "boolean", True),
        (False, "integer", 0),
        (5, "real", 5.0),
        (None, "boolean", None),
        (b"\x00\xff", "blob", b"\x00\xff"),
    ],
)
def test_a_value_fits_the_destination_column(value: object, kind: Kind, fitted: object) -> None:
    assert fit(value, kind) == fitted
    assert type(fit(value, kind)) is type(fitted)


def test_the_checksum_erases_engine_differences_only() -> None:
    assert encode_value(True) == encode_value(1)
    assert encode_value(5.0) == encode_value(5)
    assert encode_value("é") == encode_value("é".encode())
    assert encode_value(None) != encode_value(0)
    assert encode_value(0.1) != encode_value(0.10000000000000002)
    assert encode_value("ab") != encode_value("a")


def test_the_checksum_ignores_row_order_but_not_rows() -> None:
    rows = [("a", 1, None), ("b", 2, 0.5), ("c", 3, b"x")]
    one, other, fewer, doubled = TableChecksum(), TableChecksum(), TableChecksum(), TableChecksum()
    one.add(rows)
    other.add(reversed(rows))
    fewer.add(rows[:2])
    doubled.add([*rows[:2], rows[1]])
    assert one.hexdigest == other.hexdigest
    assert one.rows == 3
    assert fewer.hexdigest != one.hexdigest
    assert doubled.hexdigest != one.hexdigest
    # Values do not run into each other: ("ab", "") is not ("a", "b")
    split, joined = TableChecksum(), TableChecksum()
    split.add([("a", "b")])
    joined.add([("ab", "")])
    assert split.hexdigest != joined.hexdigest


def test_endpoints(tmp_path: Path) -> None:
    default = tmp_path / "gw.db"
    assert parse_endpoint("sqlite:", default) == Endpoint(path=default)
    assert parse_endpoint("sqlite:/x/gw.db", default) == Endpoint(path=Path("/x/gw.db"))
    assert parse_endpoint("sqlite:///x/gw.db", default) == Endpoint(path=Path("/x/gw.db"))
    url = "postgresql://gw:secret@db:5432/gw"
    assert parse_endpoint(url, default).url == url
    assert parse_endpoint(url, default).label == "postgresql://gw:***@db:5432/gw"
    with pytest.raises(StoreError, match="sqlite:PATH"):
        parse_endpoint("mysql://secret@db/gw", default)
