"""ConfigError: what is wrong with a config, named by file, field path and line."""

from __future__ import annotations


class ConfigError(Exception):
    """A config that cannot be used; ``str()`` reads ``file:line: field: reason``."""

    def __init__(self, source: str, path: str, reason: str, line: int | None = None) -> None:
        self.source = source
        self.path = path
        self.reason = reason
        self.line = line
        where = f"{source}:{line}" if line is not None else source
        field = f" {path}:" if path else ""
        super().__init__(f"{where}:{field} {reason}")
