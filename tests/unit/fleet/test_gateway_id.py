"""A gateway's id: GW_GATEWAY_ID when given and well formed, else host-pid-random."""

from __future__ import annotations

import os

import pytest

from gw.fleet.gateway_id import gateway_id, new_gateway_id


def test_gw_gateway_id_names_the_gateway() -> None:
    assert gateway_id({"GW_GATEWAY_ID": "gw-a.eu_1"}) == "gw-a.eu_1"


def test_without_it_each_run_gets_a_fresh_host_pid_random_id() -> None:
    first, second = gateway_id({}), gateway_id({"GW_GATEWAY_ID": ""})
    assert first != second
    assert f"-{os.getpid()}-" in first
    assert new_gateway_id().count("-") >= 2


@pytest.mark.parametrize("bad", ["-gw", "gw a", "gw\x1b[31m", "x" * 64, "gw/a"])
def test_a_name_that_would_garble_a_trace_or_terminal_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="GW_GATEWAY_ID"):
        gateway_id({"GW_GATEWAY_ID": bad})
