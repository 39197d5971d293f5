"""The fleet's gateway registry in PostgreSQL (``GatewayRegistry``, gw/store/port.py):
the ``gateways`` table of schema version 11, one row per running ``gw serve``."""

from __future__ import annotations

from gw.store.port import GatewayRow
from gw.store.postgres.database import Database


class Gateways:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def beat(self, row: GatewayRow) -> None:
        await self._db.execute(
            "INSERT INTO gateways (id, url, host, pid, started_at, revision, config_hash,"
            " ready, heartbeat_at, heartbeat_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET url = excluded.url, host = excluded.host,"
            " pid = excluded.pid, started_at = excluded.started_at,"
            " revision = excluded.revision, config_hash = excluded.config_hash,"
            " ready = excluded.ready, heartbeat_at = excluded.heartbeat_at,"
            " heartbeat_s = excluded.heartbeat_s",
            row.id,
            row.url,
            row.host,
            row.pid,
            row.started_at,
            row.revision,
            row.config_hash,
            row.ready,
            row.heartbeat_at,
            row.heartbeat_s,
        )

    async def list(self) -> list[GatewayRow]:
        rows = await self._db.fetch(
            "SELECT id, url, host, pid, started_at, revision, config_hash, ready, heartbeat_at,"
            " heartbeat_s FROM gateways ORDER BY started_at, id"
        )
        return [
            GatewayRow(
                id=str(r[0]),
                url=str(r[1]),
                host=str(r[2]),
                pid=int(r[3]),
                started_at=float(r[4]),
                revision=int(r[5]),
                config_hash=str(r[6]),
                ready=bool(r[7]),
                heartbeat_at=float(r[8]),
                heartbeat_s=float(r[9]),
            )
            for r in rows
        ]

    async def remove(self, gateway_id: str) -> None:
        await self._db.execute("DELETE FROM gateways WHERE id = ?", gateway_id)

    async def prune(self, *, before: float) -> int:
        return await self._db.execute("DELETE FROM gateways WHERE heartbeat_at < ?", before)
