"""The store contract: budgets per API key and per policy (schema version 14), on every
engine: a key's budget is stored, read back and replaced; a database written by the gw
before (version 13) keeps its keys and rows, and counts policies from then on."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import asyncpg
import pytest
from store_targets import Target, run

import gw.store.migrations as migrations_module
import gw.store.sqlite as sqlite_module
from gw.config.schema import TenantBudget
from gw.execution.periods import period_label
from gw.ports import UsageRow
from gw.store.api_keys import NO_BUDGET, ApiKey, new_key
from gw.store.key_rows import key_params
from gw.store.migrations import LATEST_VERSION, MIGRATIONS
from gw.store.port import StateStore
from gw.store.postgres.sql import numbered

NOW = 1_800_000_000.0
BEFORE = 13  # the schema version before budgets per key and per policy


def usage(request_id: str, **fields: Any) -> UsageRow:
    values: dict[str, Any] = {
        "request_id": request_id,
        "time": NOW,
        "day": period_label("day", NOW),
        "month": period_label("month", NOW),
        "tenant": "team-a",
        "key_id": "key_a",
        "route": "chat",
        "provider": "up",
        "model": "m",
        "status": 200,
        "error_code": None,
        "cost_usd": 0.25,
    }
    values.update(fields)
    return UsageRow(**values)


def test_a_keys_budget_is_stored_read_back_and_replaced(target: Target) -> None:
    made = new_key(tenant="team-a", created_at=NOW, budget=TenantBudget(daily_usd=1.5))
    plain = new_key(tenant="team-a", created_at=NOW + 1)
    wider = TenantBudget(weekly_usd=7.0, total_usd=0.0)

    async def body(store: StateStore) -> None:
        await store.create_key(made.key)
        await store.create_key(plain.key)
        found = await store.find_key_by_digest(made.key.digest)
        assert found is not None
        assert found.budget == TenantBudget(daily_usd=1.5)
        assert [k.budget for k in await store.list_keys()] == [made.key.budget, NO_BUDGET]
        changed = await store.set_key_budget(made.key.id, wider)
        assert changed is not None
        assert changed.budget == wider  # every period replaced: the daily one is gone
        again = await store.find_key_by_digest(made.key.digest)
        assert again is not None
        assert again.budget == wider
        assert await store.set_key_budget("key_missing", wider) is None
        cleared = await store.set_key_budget(made.key.id, NO_BUDGET)
        assert cleared is not None
        assert cleared.budget == NO_BUDGET

    run(target, body)


def test_a_database_of_version_13_keeps_its_keys_and_rows_and_counts_policies_after(
    target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as older:  # opened by the gw before this one
        older.setattr(migrations_module, "MIGRATIONS", MIGRATIONS[:BEFORE])
        older.setattr(migrations_module, "LATEST_VERSION", BEFORE)
        older.setattr(sqlite_module, "LATEST_VERSION", BEFORE)
        assert run(target, lambda store: store.schema_version()) == BEFORE
    key = new_key(tenant="team-a", created_at=NOW).key
    old_row = usage("r-old")
    _execute(target, _OLD_KEY, key_params(key)[:12])
    old_fields = [f for f in UsageRow.__struct_fields__ if f != "policy"]
    _execute(
        target,
        f"INSERT INTO usage ({', '.join(old_fields)}) VALUES ({', '.join('?' * len(old_fields))})",  # noqa: S608 - fixed names
        tuple(getattr(old_row, f) for f in old_fields),
    )
    day = period_label("day", NOW)

    async def body(store: StateStore) -> tuple[ApiKey | None, dict[tuple[str, str], float]]:
        assert await store.schema_version() == LATEST_VERSION
        found = await store.find_key_by_digest(key.digest)
        await store.write_usage([usage("r-new", policy="batch", cost_usd=0.5)])
        spend = {(subject, label): usd for subject, label, usd in await store.budget_spend(NOW)}
        return found, spend

    found, spend = run(target, body)
    assert found == key
    assert found.budget == NO_BUDGET
    assert spend[("@key:key_a", day)] == pytest.approx(0.75)  # the old row counts by key
    assert spend[("@policy:batch", day)] == pytest.approx(0.5)  # the old row had no policy
    assert {subject for subject, _ in spend} == {"team-a", "@gw", "@key:key_a", "@policy:batch"}


_OLD_KEY = """
INSERT INTO api_keys (
    id, digest, prefix, suffix, tenant, name, scopes, models, allowed_ips, created_at,
    expires_at, revoked_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


def _execute(target: Target, sql: str, params: tuple[object, ...]) -> None:
    """One statement straight to the database, as the gw of version 13 wrote its rows."""
    if target.url is None:
        with sqlite3.connect(target.path) as conn:
            conn.execute(sql, params)
        return

    async def main(url: str) -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(numbered(sql), *params)
        finally:
            await conn.close()

    asyncio.run(main(target.url))
