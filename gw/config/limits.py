"""How large a config gw reads: a byte limit on the file, and a limit on the values it
expands to (YAML aliases repeat a subtree without repeating its bytes).

A config is parsed, validated and compiled whole, in memory, before it is applied: the
limits keep that bounded (an unbounded file once took 40 s and 790 MB to refuse). The
byte limit is raised with ``GW_MAX_CONFIG_BYTES`` (gw/environment.py); the value limit
follows it.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from gw.config.problems import ConfigError
from gw.config.units import ByteSize

DEFAULT_MAX_CONFIG_BYTES: Final = 8 * 1024 * 1024
"""About 50,000 two-target routes; parsing that takes a few seconds, off the event loop."""
BYTES_PER_VALUE: Final = 4
"""The value limit is the byte limit over this: no plain file comes near it (a value
takes a key, a separator and a line), only one whose aliases are used many times."""
RAISE_HINT: Final = "set GW_MAX_CONFIG_BYTES (e.g. 32MiB) in gw's environment to raise it"


class ConfigLimits(msgspec.Struct, frozen=True, kw_only=True):
    max_bytes: int = DEFAULT_MAX_CONFIG_BYTES

    @property
    def max_values(self) -> int:
        return self.max_bytes // BYTES_PER_VALUE


def check_size(source: str, size: int, limits: ConfigLimits) -> None:
    """Refuse a file of ``size`` bytes over the limit, before it is read or parsed."""
    if size > limits.max_bytes:
        raise ConfigError(
            source,
            "",
            f"the file is {size / 2**20:.1f} MiB, over the {ByteSize(limits.max_bytes)} limit on "
            f"a config file; {RAISE_HINT}",
        )


def check_expansion(source: str, data: Any, limits: ConfigLimits) -> None:
    """Refuse parsed ``data`` holding more than ``limits.max_values`` values, counting a
    subtree each time an alias uses it (as validation would expand it). Stops counting at
    the limit, so an alias bomb costs no more than a file at the limit."""
    budget = limits.max_values - 1
    pending: list[Any] = [data] if isinstance(data, (dict, list)) else []
    while pending:
        node = pending.pop()
        values = node.values() if isinstance(node, dict) else node
        budget -= len(values)
        if budget < 0:
            raise ConfigError(
                source,
                "",
                f"the config holds more than {limits.max_values:,} values (YAML aliases "
                f"count each time they are used); the limit follows the "
                f"{ByteSize(limits.max_bytes)} limit on a config file: {RAISE_HINT}",
            )
        pending.extend(value for value in values if isinstance(value, (dict, list)))
