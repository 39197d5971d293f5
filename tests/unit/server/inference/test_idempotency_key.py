"""The Idempotency-Key header's forms (draft-ietf-httpapi-idempotency-key-header: an RFC
8941 sf-string; a bare token, as most clients send it, too), and what gw refuses."""

from __future__ import annotations

import pytest

from gw.config.schema import Config, PolicyConfig, TimeoutConfig
from gw.config.snapshot import Snapshot, compile_snapshot
from gw.config.units import Duration
from gw.errors import InvalidRequestError
from gw.server.inference.idempotency import MAX_KEY_CHARS, longest_run, parse_key


@pytest.mark.parametrize(
    ("sent", "key"),
    [
        ('"8e03978e-40d5-43e8-bc93-6894a57f9324"', "8e03978e-40d5-43e8-bc93-6894a57f9324"),
        ("8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324"),
        ('"with space and \\"quotes\\" and \\\\"', 'with space and "quotes" and \\'),
        ("  padded  ", "padded"),
        ("k" * MAX_KEY_CHARS, "k" * MAX_KEY_CHARS),
    ],
)
def test_the_forms_gw_takes(sent: str, key: str) -> None:
    assert parse_key([sent]) == key


@pytest.mark.parametrize(
    "values",
    [
        [""],
        ['""'],
        ['"unterminated'],
        ['"a" trailing'],
        ['"a", "b"'],  # two fields joined by a proxy
        ["a,b"],
        ["a b"],
        ['"bad \\x escape"'],
        ['"tab\tinside"'],
        ["é"],
        ["k" * (MAX_KEY_CHARS + 1)],
        ["one", "two"],
    ],
)
def test_what_gw_refuses(values: list[str]) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        parse_key(values)
    assert refused.value.param == "Idempotency-Key"


def snapshot(config: Config) -> Snapshot:
    return compile_snapshot(config, revision=1, source="t")


def test_a_pending_key_is_held_for_the_longest_run_a_policy_allows() -> None:
    default = TimeoutConfig().total.seconds
    assert longest_run(snapshot(Config())) == default + 60
    slow = PolicyConfig(name="slow", timeout=TimeoutConfig(total=Duration(3600.0)))
    assert longest_run(snapshot(Config(policies=(slow,)))) == 3600 + 60
