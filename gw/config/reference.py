"""docs/reference/config.md: every config key with its type, default, allowed values and
description, one table per section, from the same source as ``gw config schema``: the
config Structs (gw/config/schema.py) and gw/config/field_docs/.

The page is checked in; tests/unit/config/test_config_reference.py fails while it differs
from what ``render_reference`` makes, and rewrites it when asked (``COMMAND``).
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterator
from typing import Any

import msgspec
import yaml

from gw.config.field_docs import SECTIONS, Field
from gw.config.json_schema import AlsoSetBy, default_value, field_doc, split_optional, struct_of
from gw.config.schema import Config
from gw.config.units import ByteSize, Duration, encode_unit

COMMAND = "GW_UPDATE_DOCS=1 python -m pytest tests/unit/config/test_config_reference.py"

INTRO = f"""\
# Config reference

<!-- Generated from gw/config/schema.py, control_schema.py and field_docs/; do not edit by hand.
     `{COMMAND}` rewrites it. -->

gw reads one YAML file: `--config`, else `$GW_CONFIG`, else `<state-dir>/gw.yaml`. Every
section is optional. Precedence: built-in defaults < the file < `GW_*` variables <
command-line flags. With no file, gw runs provider `mock` (kind `mock`) behind route `mock`
(`mock/mock-1`).

- Unknown keys are errors, and so is a key set twice in one mapping (YAML would silently
  keep the last). Errors name the file, the line, the field path and the reason, e.g.
  `gw.yaml:4: routes[0].targets[0].provider: unknown provider 'ghost'`.
- A **duration** is `150ms`, `2s`, `10m`, `1h` or `7d`; a bare number is seconds.
- A **size** is `512KiB`, `8MiB`, `1GiB` (or `KB`, `MB`, `GB`, `B`); a bare number is bytes.
- `null` (or an empty value) means the field's "none" as its description says.
- YAML reads a bare `yes`, `no`, `on`, `off`, `true` or `false` as a boolean, and a bare
  date (`2024-10-21`) as a date: quote such words where a string is meant.
- Secrets are never written in the file: a key is a reference, `env:NAME` (a variable in
  gw's environment) or `vault:NAME` (a secret stored with `gw vault set NAME`).

`gw config validate` checks a file; `gw config show` prints the config gw would run with.

## In an editor

`gw config schema` prints a JSON Schema (draft 2020-12) of this file, made from the same
source as this page, so an editor can check `gw.yaml` and complete its keys and values as
you type. It catches unknown keys, wrong types, values outside a list or a bound, missing
required keys and malformed durations, sizes, URLs and secret references;
`gw config validate` remains the full check (names that must exist or be unique).

```sh
gw config schema --output gw.schema.json
```

With the YAML language server (VS Code's YAML extension by Red Hat, Neovim, Helix, Zed, ...)
name the schema on the file's first line:

```yaml
# yaml-language-server: $schema=./gw.schema.json
```

or map it in VS Code's `settings.json`:

```json
{{"yaml.schemas": {{"./gw.schema.json": ["gw.yaml", "**/gw/*.yaml"]}}}}
```

Write the schema again after upgrading gw. The language server reads YAML 1.2, where a
bare `off` or `2024-10-21` is a string; gw reads YAML 1.1, where they are a boolean and a
date, and refuses them where it wants a string: quote them.

"""


def render_reference(also_set_by: AlsoSetBy | None = None) -> str:
    """The whole page. ``also_set_by``: ``server.host`` -> (``GW_HOST``, ``--host``)."""
    names = also_set_by or {}
    parts = [INTRO]
    sections = list(_sections(Config, "", ""))
    parts.append("## Sections\n\n")
    parts.extend(f"- [`{title}`](#{_slug(title)})\n" for title, _, _ in sections[1:])
    for title, struct, path in sections:
        level = "##" if struct is Config or title.count(".") == 0 else "###"
        heading = "Top level" if struct is Config else f"`{title}`"
        parts.append(f"\n{level} {heading}\n\n{SECTIONS[struct].summary}\n\n")
        parts.append(_table(struct, title, path, names))
    parts.append(_defaults())
    return "".join(parts)


def _sections(struct: type, title: str, path: str | None) -> Iterator[tuple[str, type, str | None]]:
    """(title such as ``providers[].accounts[]``, Struct, dotted path or None inside a
    list), in the file's order, depth first."""
    yield title, struct, path
    for info in msgspec.structs.fields(struct):
        inner = struct_of(info.type)
        if inner is None:
            continue
        in_list = typing.get_origin(split_optional(info.type)[0]) is tuple
        name = f"{title}.{info.name}".lstrip(".") + ("[]" if in_list else "")
        below = None if path is None or in_list else f"{path}.{info.name}".lstrip(".")
        yield from _sections(inner, name, below)


def _table(struct: type, title: str, path: str | None, also_set_by: AlsoSetBy) -> str:
    rows = ["| Key | Type | Default | Allowed | Description |\n", "|---|---|---|---|---|\n"]
    for info in msgspec.structs.fields(struct):
        doc = field_doc(struct, info.name)
        description = doc.description
        dotted = None if path is None else f"{path}.{info.name}".lstrip(".")
        if dotted is not None and (others := also_set_by.get(dotted)):
            description += f" Also set by {', '.join(f'`{name}`' for name in others)}."
        cells = [
            f"`{info.name}`",
            _type(info.type, f"{title}.{info.name}".lstrip(".")),
            _default(info),
            _allowed(info.type, doc),
            description,
        ]
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |\n")
    return "".join(rows)


def _type(declared: Any, title: str) -> str:
    inner, nullable = split_optional(declared)
    origin = typing.get_origin(inner)
    if origin is tuple:
        item = typing.get_args(inner)[0]
        struct = struct_of(item)
        text = (
            f"list of [sections](#{_slug(title + '[]')})"
            if struct
            else f"list of {_type(item, title)}s"
        )
    elif origin is dict:
        text = "map of string to string"
    elif isinstance(inner, type) and issubclass(inner, msgspec.Struct):
        text = f"[section](#{_slug(title)})"
    else:
        text = _SCALARS.get(inner, "string")
    return f"{text} or `null`" if nullable else text


_SCALARS: dict[Any, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    Duration: "duration",
    ByteSize: "size",
}


def _default(info: msgspec.structs.FieldInfo) -> str:
    default = default_value(info)
    if default is msgspec.NODEFAULT:
        return "required"
    if isinstance(info.default, msgspec.Struct):
        return "see section"
    if isinstance(default, str):
        return f"`{default}`"
    return f"`{json.dumps(default)}`"


def _allowed(declared: Any, doc: Field) -> str:
    inner, _ = split_optional(declared)
    if typing.get_origin(inner) is tuple:
        inner = typing.get_args(inner)[0]
    values = doc.choices or (
        typing.get_args(inner) if typing.get_origin(inner) is typing.Literal else ()
    )
    rules = [", ".join(f"`{value}`" for value in values)] if values else []
    if doc.text is not None:
        rules.append(doc.text.reads)
    rules.extend(_bounds(doc, inner is Duration))
    if doc.min_items is not None:
        rules.append(f"at least {doc.min_items}")
    return "; ".join(rules)


def _bounds(doc: Field, duration: bool) -> list[str]:
    def shown(value: float) -> str:
        if not duration:
            return f"{value:g}"
        return "`0s`" if value == 0 else f"`{Duration(value)}`"

    if doc.minimum is not None and doc.maximum is not None:
        return [f"{shown(doc.minimum)} to {shown(doc.maximum)}"]
    low = None
    if doc.above is not None:
        low = f"> {shown(doc.above)}"
    elif doc.minimum is not None:
        low = f"≥ {shown(doc.minimum)}"
    high = f"≤ {shown(doc.maximum)}" if doc.maximum is not None else None
    return [" and ".join(bound for bound in (low, high) if bound)] if low or high else []


def _defaults() -> str:
    data = msgspec.to_builtins(Config(), enc_hook=encode_unit)
    text = yaml.safe_dump(data, sort_keys=False)
    return (
        "\n## Every default\n\nThe built-in defaults, as a file that sets each one "
        "(`providers`, `routes` and the rest are empty lists):\n\n"
        f"```yaml\n{text}```\n"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _slug(title: str) -> str:
    """The anchor GitHub and MkDocs give a heading: lower case, punctuation dropped."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower())
