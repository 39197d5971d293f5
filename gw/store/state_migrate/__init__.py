"""``gw state migrate``: copy every table of one state store into an empty other one.

SQLite to PostgreSQL, back, or PostgreSQL to PostgreSQL. Each side is opened the normal
way first (so both are at this gw's schema version), then read and written through its
own engine's connection, table by table in batches, inside one transaction on the
destination; before it commits, each table is read back and compared with the source by
row count and checksum (checksum.py). Nothing is committed unless every table matches.
"""

from gw.store.state_migrate.copy import MigrationReport, TableReport, migrate
from gw.store.state_migrate.endpoint import Endpoint, parse_endpoint

__all__ = ["Endpoint", "MigrationReport", "TableReport", "migrate", "parse_endpoint"]
