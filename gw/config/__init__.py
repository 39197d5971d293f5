"""Config: the strict schema, loading with path-qualified errors, and compiled snapshots."""

from gw.config.loader import BUILTIN_SOURCE, load_config
from gw.config.problems import ConfigError
from gw.config.schema import Config
from gw.config.snapshot import Snapshot, compile_snapshot, config_hash

__all__ = [
    "BUILTIN_SOURCE",
    "Config",
    "ConfigError",
    "Snapshot",
    "compile_snapshot",
    "config_hash",
    "load_config",
]
