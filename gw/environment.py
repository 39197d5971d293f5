"""Where gw's state and config live, and which ``GW_*`` variables override the file.

Precedence: built-in defaults < config file < ``GW_*`` environment < command-line flags.
This is the only module that reads the process environment; it hands values down.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from gw.config import Config, ConfigError, load_config
from gw.config.catalog import ShippedCatalog, parse_catalog
from gw.config.limits import ConfigLimits, check_size
from gw.config.loader import BUILTIN_SOURCE, DEFAULT_LIMITS
from gw.config.units import ByteSize
from gw.plugin_loader import plugin_problems
from gw.upstream_http.tls import tls_file_problems

CONFIG_FILE_NAME = "gw.yaml"
DATABASE_FILE_NAME = "gw.db"
SERVER_FILE_NAME = "server.json"

# GW_* variable -> (dotted config path, parser)
ENV_OVERRIDES: dict[str, tuple[str, type]] = {
    "GW_HOST": ("server.host", str),
    "GW_PORT": ("server.port", int),
    "GW_AUTH_MODE": ("auth.mode", str),
    "GW_MAX_CONCURRENCY": ("server.max_concurrency", int),
    "GW_STATE_URL": ("state.url", str),
    "GW_REDIS_URL": ("state.redis_url", str),
}


def state_dir(flag: Path | None, environ: Mapping[str, str]) -> Path:
    """``--state-dir``, else ``GW_HOME``, else ``$XDG_STATE_HOME/gw`` (``~/.local/state/gw``);
    absolute, so what gw prints of it means the same from any directory."""
    if flag is not None:
        return flag.expanduser().absolute()
    if environ.get("GW_HOME"):
        return Path(environ["GW_HOME"]).expanduser().absolute()
    xdg = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return (Path(xdg).expanduser() / "gw").absolute()


def config_path(flag: Path | None, home: Path, environ: Mapping[str, str]) -> Path:
    """``--config``, else ``GW_CONFIG``, else ``<state-dir>/gw.yaml``."""
    if flag is not None:
        return flag.expanduser().absolute()
    if environ.get("GW_CONFIG"):
        return Path(environ["GW_CONFIG"]).expanduser().absolute()
    return home / CONFIG_FILE_NAME


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for name, (path, parse) in ENV_OVERRIDES.items():
        if name in environ:
            try:
                overrides[path] = parse(environ[name])
            except ValueError:
                raise ConfigError(
                    f"${name}", path, f"{environ[name]!r} is not a valid {parse.__name__}"
                ) from None
    return overrides


def config_limits(environ: Mapping[str, str]) -> ConfigLimits:
    """How large a config file gw reads: ``GW_MAX_CONFIG_BYTES`` (``32MiB``, or bytes)."""
    value = environ.get("GW_MAX_CONFIG_BYTES")
    if not value:
        return DEFAULT_LIMITS
    try:
        return ConfigLimits(
            max_bytes=ByteSize.parse(int(value) if value.isdigit() else value).bytes
        )
    except ValueError:
        raise ConfigError(
            "$GW_MAX_CONFIG_BYTES", "", f"{value!r} is not a size; write e.g. 32MiB"
        ) from None


class LoadedConfig(msgspec.Struct, frozen=True, kw_only=True):
    config: Config
    source: str
    path: Path
    exists: bool
    text: str | None = None  # the file's text as read (None: the built-in default)


def read_config_text(path: Path, limits: ConfigLimits = DEFAULT_LIMITS) -> str:
    """The config file's text; a file over the size limit is refused unread.
    Raises FileNotFoundError for a missing file, ConfigError for any other failure."""
    try:
        with path.open(encoding="utf-8") as file:
            check_size(str(path), os.fstat(file.fileno()).st_size, limits)
            return file.read()
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), "", f"cannot read the file: {exc}") from None


def read_config(
    path: Path,
    *,
    explicit: bool,
    overrides: Mapping[str, Any] | None = None,
    limits: ConfigLimits = DEFAULT_LIMITS,
    plugins: bool = False,
) -> LoadedConfig:
    """Load ``path``; a missing default file means the built-in config, a missing
    explicit one (``--config``/``GW_CONFIG``) is an error. Files the config names (a
    provider's TLS certificates) are read too: one gw cannot use is a ``ConfigError``.
    ``plugins``: import the config's plugins too (a server, a reload, `gw config
    validate`); other commands do not run them, so need not find their code."""
    try:
        text = read_config_text(path, limits)
    except FileNotFoundError:
        if explicit:
            raise ConfigError(
                str(path), "", "no such file (run `gw init` to write an example)"
            ) from None
        config = load_config(None, BUILTIN_SOURCE, overrides)
        return LoadedConfig(config=config, source=BUILTIN_SOURCE, path=path, exists=False)
    outside = outside_problems if plugins else tls_file_problems
    config = load_config(text, str(path), overrides, limits, outside=outside)
    return LoadedConfig(config=config, source=str(path), path=path, exists=True, text=text)


def outside_problems(config: Config) -> Iterator[tuple[str, str]]:
    """What a config names outside itself that gw cannot use: TLS files, plugins."""
    yield from tls_file_problems(config)
    yield from plugin_problems(config)


def process_environ() -> dict[str, str]:
    return dict(os.environ)


def replace_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temp file beside it, then ``os.replace``
    (the watcher and readers see the old file or the new, never half of one). A symlink
    stays a symlink: its target is what gets replaced."""
    path = path.resolve()
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def running_server_pid(home: Path) -> int | None:
    """The pid of a gw server running on ``home`` (from its server.json), or None."""
    try:
        pid = int(json.loads((home / SERVER_FILE_NAME).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return None  # a stale file from a server that did not stop cleanly
    except PermissionError:
        return pid  # alive, under another user
    return pid


def database_path(home: Path) -> Path:
    """The state database in state directory ``home``."""
    return home / DATABASE_FILE_NAME


CATALOG_FILE = "catalog.yaml"


@functools.cache  # package data: the same for the life of the process
def read_shipped_catalog() -> ShippedCatalog:
    """The model catalog gw ships (``gw/catalog.yaml``, package data); ``ConfigError``
    when it does not parse (a gw bug)."""
    text = resources.files("gw").joinpath(CATALOG_FILE).read_text(encoding="utf-8")
    return parse_catalog(text, f"gw/{CATALOG_FILE}")
