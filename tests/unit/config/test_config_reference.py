"""docs/reference/config.md is what gw/config/reference.py makes from the config types and
their descriptions, so the published reference never drifts from the code. Regenerate it
with the command in the failure message."""

from __future__ import annotations

import os
import re
from pathlib import Path

import jsonschema
import msgspec
import yaml

from gw.cli.options import override_names
from gw.config import Config, load_config
from gw.config.field_docs import SECTIONS
from gw.config.json_schema import config_json_schema
from gw.config.reference import COMMAND, render_reference

DOC = Path(__file__).resolve().parents[3] / "docs" / "reference" / "config.md"


def test_the_published_reference_says_what_the_code_does() -> None:
    text = render_reference(override_names())
    if os.environ.get("GW_UPDATE_DOCS") == "1":
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(text, encoding="utf-8")
    published = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert published == text, f"docs/reference/config.md is out of date; regenerate it: {COMMAND}"


def test_every_field_has_a_row_in_its_sections_table() -> None:
    text = render_reference()
    for struct, section in SECTIONS.items():
        assert section.summary in text, struct.__name__
        for info in msgspec.structs.fields(struct):
            assert f"| `{info.name}` |" in text, f"{struct.__name__}.{info.name}"


def test_every_link_on_the_page_has_its_heading() -> None:
    """Anchors as GitHub and MkDocs make them: lower case, punctuation dropped."""
    text = render_reference()
    headings = {
        re.sub(r"[^\w\s-]", "", title).strip().lower().replace(" ", "-")
        for title in re.findall(r"^#+ (.+)$", text, re.MULTILINE)
    }
    links = set(re.findall(r"\]\(#([^)]+)\)", text))
    assert links
    assert links <= headings, sorted(links - headings)


def test_a_row_shows_type_default_allowed_values_and_what_else_sets_it() -> None:
    text = render_reference(override_names())
    assert (
        "| `port` | integer | `8787` | 0 to 65535 | Port to listen on; `0` picks a free one. "
        "Read at start only: a change needs a restart. Also set by `GW_PORT`, "
        "`gw serve --port`. |"
    ) in text
    assert "| `kind` | string | required | `openai`, `openai_compatible`," in text
    assert "| `queue_timeout` | duration | `2s` |" in text
    assert "| `after` | duration or `null` | `null` | > `0s` |" in text


def test_the_defaults_block_loads_as_the_defaults() -> None:
    """The page ends with every default as YAML: a file gw loads to the built-in defaults
    (and that the JSON Schema takes)."""
    block = render_reference().split("```yaml\n")[-1].split("```")[0]
    assert load_config(block, "defaults") == Config()
    jsonschema.Draft202012Validator(config_json_schema()).validate(yaml.safe_load(block))
