"""The PostgreSQL state store (``state.url``): a fleet of gateways sharing one database.

The only package of gw that imports asyncpg (an import-linter contract keeps it so), and
only imported when ``state.url`` is set (gw/store/open.py). One module per concept, as
the SQLite store has; ``store.py`` puts them together behind ``StateStore``.
"""
