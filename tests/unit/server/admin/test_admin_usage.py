"""GET /admin/v1/usage: what a caller may ask for (group, period, tenant) by its scopes."""

from __future__ import annotations

import pytest

from gw.errors import InvalidRequestError, PermissionDeniedError
from gw.server.admin.api import UsageQuery
from gw.server.auth import ADMIN, ANONYMOUS, Principal

NOW = 1_000_000.0
TENANT_READER = Principal(key_id="key_r", tenant="team-a", scopes=("usage:read",))


def test_defaults_group_by_model_over_all_time() -> None:
    assert UsageQuery.parse({}, ANONYMOUS, now=NOW) == UsageQuery(
        by="model", since=None, tenant=None
    )


def test_an_admin_may_read_any_tenant() -> None:
    query = UsageQuery.parse({"by": "day", "since": "7d", "tenant": "team-b"}, ADMIN, now=NOW)
    assert query == UsageQuery(by="day", since=NOW - 7 * 86400, tenant="team-b")


def test_a_usage_reader_key_reads_only_its_own_tenant() -> None:
    assert UsageQuery.parse({"by": "key"}, TENANT_READER, now=NOW).tenant == "team-a"
    assert UsageQuery.parse({"tenant": "team-a"}, TENANT_READER, now=NOW).tenant == "team-a"
    with pytest.raises(PermissionDeniedError, match="its own tenant"):
        UsageQuery.parse({"tenant": "team-b"}, TENANT_READER, now=NOW)


@pytest.mark.parametrize(
    ("params", "param"),
    [({"by": "colour"}, "by"), ({"since": "yesterday"}, "since")],
)
def test_a_bad_parameter_is_an_invalid_request_naming_it(
    params: dict[str, str], param: str
) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        UsageQuery.parse(params, ADMIN, now=NOW)
    assert raised.value.param == param
