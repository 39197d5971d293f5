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


class YamlEditError(ValueError):
    """The text is not YAML, or not a mapping of sections with a list under ``section``.

    Raised by gw/config/yaml_edit.py; defined here so that catching it does not import
    ruamel.yaml, which that module needs (~25 ms of a start)."""
